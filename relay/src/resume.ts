// Resumption: a client whose transport died reconnects with the same connect
// token. Its new link is bound to the existing session only if the first
// datagram carries the session's pinned connection ID, so a token alone
// cannot take over a session (the connection ID never leaves the client,
// relay and backend), and a connection ID alone cannot either (it is looked
// up only under the token's jti).
import { RELAY_CLOSE, closeReason, type RelayCloseCode } from './errors.js';
import { HELLO, packetHeader, type LinkHandle, type Session, type ClientLink } from './session.js';

/**
 * The listener's handle for a link that claims to resume `session`, until
 * its first datagram settles the claim.
 */
export function resumeCandidate(
  session: Session,
  link: ClientLink,
  handshakeTimeoutMs: number,
  onRefused: (code: RelayCloseCode) => void,
  /** Start a new session on `link` for this token (the parked one was given up). */
  startFresh: () => LinkHandle | null,
): LinkHandle {
  let bound: LinkHandle | null = null;
  let done = false;
  const refuse = (code: RelayCloseCode, detail: string) => {
    done = true;
    clearTimeout(timer);
    onRefused(code);
    link.close(RELAY_CLOSE[code], closeReason(code, detail));
  };
  const timer = setTimeout(() => !done && refuse('RELAY_ERR_HANDSHAKE_TIMEOUT', `no datagram within ${handshakeTimeoutMs} ms`), handshakeTimeoutMs);
  return {
    fromClient(d) {
      if (bound) return bound.fromClient(d);
      if (done) return;
      const h = packetHeader(d);
      if (h === null) return refuse('RELAY_ERR_MALFORMED_DATAGRAM', 'not a Ricochet packet');
      if (session.isEnded) return refuse('RELAY_ERR_RESUME_FAILED', 'the session has ended');
      if (h.connId !== session.connectionId) {
        // A HELLO beside a parked session: the client gave that one up and
        // starts over, so the parked session ends and a new one begins.
        if (session.parked && h.type === HELLO) {
          done = true;
          clearTimeout(timer);
          session.close('RELAY_SESSION_MOVED', 'replaced by a new connection on the same token');
          bound = startFresh();
          return bound?.fromClient(d);
        }
        // Otherwise it is a second connection on the same token, not a resume.
        return refuse('RELAY_ERR_TOKEN_IN_USE', 'this token already has a live session');
      }
      done = true;
      clearTimeout(timer);
      bound = session.resume(link);
      bound.fromClient(d);
    },
    close(code, detail) {
      if (bound) return bound.close(code, detail);
      refuse(code, detail ?? '');
    },
    clientClosed(graceful) {
      if (bound) return bound.clientClosed(graceful);
      done = true;
      clearTimeout(timer);
    },
  };
}
