// Canvas 2D drawing of the arena: floor grid, walls, bullets, players
// (the local one predicted, the others interpolated), kill feed.
import { MAX_HP, PLAYER_HALF, type BulletState, type PlayerState } from '../protocol/index.js';
import type { GameState } from './game.js';

const COLORS = ['#ff5d73', '#3ec1ff', '#ffd23f', '#7ae582', '#c77dff', '#ff9f1c', '#2ec4b6', '#f15bb5'];
export const colorOf = (id: number) => COLORS[id % COLORS.length]!;

export function draw(ctx: CanvasRenderingContext2D, g: GameState, nowMs: number, localAim: number): void {
  const { width: W, height: H } = g;
  ctx.fillStyle = '#0d1321';
  ctx.fillRect(0, 0, W, H);
  ctx.strokeStyle = 'rgba(120,150,200,0.08)';
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let x = 0; x <= W; x += 50) (ctx.moveTo(x, 0), ctx.lineTo(x, H));
  for (let y = 0; y <= H; y += 50) (ctx.moveTo(0, y), ctx.lineTo(W, y));
  ctx.stroke();

  for (const w of g.walls) {
    ctx.fillStyle = '#2b3a55';
    ctx.fillRect(w.x, w.y, w.w, w.h);
    ctx.fillStyle = '#3e5479';
    ctx.fillRect(w.x, w.y, w.w, 4);
  }

  const { players, bullets } = g.view(nowMs);
  drawBullets(ctx, bullets);
  for (const p of players) drawPlayer(ctx, p, g.name(p.id), false);
  const me = g.predictor?.state;
  if (me && g.meServer) drawPlayer(ctx, { ...g.meServer, x: me.x, y: me.y, aim: localAim, alive: me.alive }, g.name(g.me), true);

  ctx.font = '600 22px system-ui, sans-serif';
  ctx.textAlign = 'right';
  g.feed.forEach((line, i) => {
    const age = nowMs - line.atMs;
    if (age > 6000) return;
    ctx.fillStyle = `rgba(230,236,255,${Math.max(0, 1 - age / 6000)})`;
    ctx.fillText(line.text, W - 20, 36 + i * 28);
  });
  if (me && !me.alive) {
    ctx.textAlign = 'center';
    ctx.font = '700 48px system-ui, sans-serif';
    ctx.fillStyle = 'rgba(255,93,115,0.9)';
    ctx.fillText('respawning…', W / 2, H / 2);
  }
}

function drawBullets(ctx: CanvasRenderingContext2D, bullets: BulletState[]): void {
  for (const b of bullets) {
    ctx.fillStyle = colorOf(b.owner);
    ctx.shadowColor = colorOf(b.owner);
    ctx.shadowBlur = 12;
    ctx.beginPath();
    ctx.arc(b.x, b.y, 5, 0, Math.PI * 2);
    ctx.fill();
  }
  ctx.shadowBlur = 0;
}

function drawPlayer(ctx: CanvasRenderingContext2D, p: PlayerState, name: string, local: boolean): void {
  const c = colorOf(p.id);
  ctx.globalAlpha = p.alive ? 1 : 0.25;
  ctx.strokeStyle = c;
  ctx.lineWidth = 8;
  ctx.beginPath();
  ctx.moveTo(p.x, p.y);
  ctx.lineTo(p.x + Math.cos(p.aim) * (PLAYER_HALF + 12), p.y + Math.sin(p.aim) * (PLAYER_HALF + 12));
  ctx.stroke();
  ctx.fillStyle = c;
  ctx.beginPath();
  ctx.arc(p.x, p.y, PLAYER_HALF, 0, Math.PI * 2);
  ctx.fill();
  if (local) {
    ctx.strokeStyle = '#ffffff';
    ctx.lineWidth = 3;
    ctx.beginPath();
    ctx.arc(p.x, p.y, PLAYER_HALF + 5, 0, Math.PI * 2);
    ctx.stroke();
  }
  ctx.font = '600 16px system-ui, sans-serif';
  ctx.textAlign = 'center';
  ctx.fillStyle = '#e6ecff';
  ctx.fillText(name, p.x, p.y - PLAYER_HALF - 16);
  for (let i = 0; i < MAX_HP; i++) {
    ctx.fillStyle = i < p.hp ? '#7ae582' : '#3a4257';
    ctx.fillRect(p.x - 16 + i * 11, p.y - PLAYER_HALF - 11, 9, 4);
  }
  ctx.globalAlpha = 1;
}
