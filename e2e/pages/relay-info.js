// The relay's certificate hash and URLs, for every test page. Fetched over the
// impaired link in the netem and bench runs, where a request can die with its
// TCP connection (a reused connection the relay closed while its FIN was
// lost): setup, not what a test measures, so it is tried three times.
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `GET {relayHttp}/cert-hash`; `log` hears of each failed try. */
export async function relayInfo(relayHttp, log = () => {}) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await (await fetch(`${relayHttp}/cert-hash`)).json();
    } catch (e) {
      if (attempt === 3) throw e;
      log(`cert-hash fetch failed (${e}), trying again`);
      await sleep(200);
    }
  }
}
