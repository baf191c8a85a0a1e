/**
 * How the daemon's frames reach an app's socket.
 *
 * Each text frame is one buffer, its RFC 6455 header and its UTF-8 payload together (`textFrame`):
 * the ws library frames a text as a header buffer and the string beside it, corked and handed to
 * the kernel as a two-part writev, and builds the frame's options and header per send; one buffer
 * is one plain write, and a burst of them one writev of whole frames.
 *
 * Frames written to one socket in one tick go out in one write (`tickBatcher`): the socket is
 * corked at the first frame of a tick and uncorked once the tick's work (its promise jobs
 * included) is done. Unbatched, a burst of deliveries to one app cost a system call each (a
 * quarter of the socket path's CPU in the profiles of issue 36); corked, Node hands the burst to
 * the kernel in one writev. Nothing waits longer than the tick that wrote it.
 */
import type { Duplex } from 'node:stream';

/** FIN and the text opcode: a whole text frame (RFC 6455 §5.2). */
const FIN_TEXT = 0x81;

/** The bytes of an unmasked (server-to-client), unfragmented text frame carrying `text`. */
export function textFrame(text: string): Buffer {
  const length = Buffer.byteLength(text);
  const head = length < 126 ? 2 : length < 0x10000 ? 4 : 10;
  const frame = Buffer.allocUnsafe(head + length);
  frame[0] = FIN_TEXT;
  if (head === 2) frame[1] = length;
  else if (head === 4) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(Math.floor(length / 0x1_0000_0000), 2);
    frame.writeUInt32BE(length >>> 0, 6);
  }
  frame.write(text, head, 'utf8');
  return frame;
}

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
