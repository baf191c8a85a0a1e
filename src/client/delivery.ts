/**
 * A delivery as the daemon's API answers it (GET /deliveries, deliver-test): what the CLI's delivery commands and
 * `appreg test` read.
 */

export interface Attempt {
  id: string;
  at: string;
  retryNum: number;
  status?: number;
  latencyMs: number;
  outcome: string;
  excerpt?: string;
  error?: string;
  message?: string;
  replay?: boolean;
}
export interface Delivery {
  id: string;
  kind: string;
  subject?: string;
  appId: string;
  appName: string;
  url?: string;
  transport: string;
  state: string;
  outcome?: string;
  ephemeralMessage?: string;
  response?: unknown;
  payload: unknown;
  attempts: Attempt[];
  createdAt: string;
  nextAttemptAt?: string;
  cancelReason?: string;
}
