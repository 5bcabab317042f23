// Plain Node ws echo server (baseline). Usage: node wsecho.cjs PORT
const { WebSocketServer } = require('ws');
const port = +process.argv[2] || 9001;
const wss = new WebSocketServer({ host: '127.0.0.1', port, perMessageDeflate: false });
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
});
wss.on('listening', () => console.error('wsecho listening', port));
