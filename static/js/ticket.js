// ticketRef reads a ticket's visitor id (the lottery reference the page
// shows) without verifying it (the server signed it; the page only shows what
// it holds): format 2 and 3 are base64url of format(1) seq(8) draw(8) iat(8)
// exp(8) roomLen(1) room visitorLen(1) visitor tag(32) (internal/token),
// whose draw field only format 2 holds in plain (0 without a draw; format 3
// masks the draw, secret until the opening: draw is null); format 1 is a JWT
// with sub and draw claims. Returns null for anything else.
export function ticketRef(ticket) {
  if (typeof ticket !== 'string' || ticket.length > 2048) return null;
  try {
    if (ticket.includes('.')) {
      const c = JSON.parse(atob(ticket.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
      return typeof c.sub === 'string' && typeof c.draw === 'number' ? { visitor: c.sub, draw: c.draw } : null;
    }
    const raw = atob(ticket.replace(/-/g, '+').replace(/_/g, '/'));
    const b = Uint8Array.from(raw, ch => ch.charCodeAt(0));
    if ((b[0] !== 2 && b[0] !== 3) || b.length < 34 + 3 + 32) return null;
    const body = b.subarray(0, b.length - 32);
    const rl = body[33];
    const vl = body[34 + rl];
    if (rl < 1 || vl < 1 || 34 + rl + 1 + vl !== body.length) return null;
    const draw = b[0] === 2 ? new DataView(body.buffer, body.byteOffset + 9, 8).getFloat64(0) : null;
    const visitor = new TextDecoder().decode(body.subarray(34 + rl + 1));
    return { visitor, draw };
  } catch {
    return null;
  }
}
