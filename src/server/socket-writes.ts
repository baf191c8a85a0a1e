/**
 * Frames written to one socket in one tick go out in one write: the socket is corked at the first
 * frame of a tick and uncorked once the tick's work (its promise jobs included) is done. The ws
 * library writes each frame as its own write, so a burst of deliveries to one app cost a system call
 * each (a quarter of the socket path's CPU in the profiles of issue 36); corked, Node hands the
 * burst to the kernel in one writev. Nothing waits longer than the tick that wrote it.
 */
import type { Duplex } from 'node:stream';

/** Call before each write to `socket`: the writes of this tick are gathered into one. */
export function tickBatcher(socket: Duplex): () => void {
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  return () => {
    if (corked || socket.destroyed) return;
    corked = true;
    socket.cork();
    process.nextTick(uncork);
  };
}
