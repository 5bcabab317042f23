// Resumption on the relay that started the session: a client whose
// transport died reconnects with the same connect token. Its new link is
// bound to the existing session (and its backend socket) only if the first
// datagram carries the session's connection ID and proves the session key
// from its HELLO (a DATA packet tagged with it, or a HELLO carrying it), so
// neither a leaked token nor a known connection ID, nor both, take a session
// over. Tokens are single use: a HELLO for a new connection on a token that
// already opened a session is refused. (A relay that never saw the session
// cannot check the key; the game server does: see session.ts, take-over.)
import { RELAY_CLOSE, closeReason, type RelayCloseCode } from './errors.js';
import { packetHeader, type LinkHandle, type Session, type ClientLink } from './session.js';

/** The listener's handle for a link that claims to resume `session`, until its first datagram settles the claim. */
export function resumeCandidate(session: Session, link: ClientLink, handshakeTimeoutMs: number, onRefused: (code: RelayCloseCode) => void): LinkHandle {
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
      const fresh = h.type === 1; // HELLO
      if (session.isEnded) return fresh ? refuse('RELAY_ERR_TOKEN_REUSED', 'connect tokens are single use') : refuse('RELAY_ERR_RESUME_FAILED', 'the session has ended');
      // A HELLO for another connection on a used token: a second session, refused.
      if (h.connId !== session.connectionId) return refuse(fresh ? 'RELAY_ERR_TOKEN_REUSED' : 'RELAY_ERR_TOKEN_IN_USE', 'this token already has a session');
      // The token and the connection ID are not enough: the session key must be shown.
      if (!session.provesOwnership(d)) return refuse('RELAY_ERR_RESUME_FAILED', 'the first datagram does not prove the session key');
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
