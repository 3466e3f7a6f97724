// The join challenge: some rooms ask every fresh join for a proof of work
// (about a second of a phone's time) instead of limiting joins per address,
// which would turn away visitors who share one. The server's 403
// challenge_required carries {challenge, bits}; the answer is the first
// counter n for which SHA-256(challenge + "." + n) starts with `bits` zero
// bits. SHA-256 is computed here rather than with crypto.subtle, whose one
// promise per digest makes it a hundred times slower for short messages; the
// fixed prefix's full blocks are hashed once. It runs in a worker so the page
// stays responsive.

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const IV = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const W = new Uint32Array(64);

// block runs SHA-256's compression on 64 bytes of buf at off into h.
function block(h, buf, off) {
  for (let i = 0; i < 16; i++) {
    const j = off + 4 * i;
    W[i] = (buf[j] << 24) | (buf[j + 1] << 16) | (buf[j + 2] << 8) | buf[j + 3];
  }
  for (let i = 16; i < 64; i++) {
    const a = W[i - 15], b = W[i - 2];
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (k + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    k = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
  }
  h[0] = (h[0] + a) | 0; h[1] = (h[1] + b) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + d) | 0;
  h[4] = (h[4] + e) | 0; h[5] = (h[5] + f) | 0; h[6] = (h[6] + g) | 0; h[7] = (h[7] + k) | 0;
}

// zeroBits counts the leading zero bits of a digest given as 32-bit words.
export function zeroBits(h) {
  let n = 0;
  for (const w of h) {
    if (w === 0) { n += 32; continue; }
    return n + Math.clz32(w);
  }
  return n;
}

// sha256 is SHA-256 of bytes, as 8 words: for the self-check below.
export function sha256(bytes) {
  const h = Int32Array.from(IV);
  const padded = new Uint8Array(((bytes.length + 9 + 63) >> 6) << 6);
  padded.set(bytes);
  padded[bytes.length] = 0x80;
  const bitsLen = bytes.length * 8;
  padded[padded.length - 4] = bitsLen >>> 24; padded[padded.length - 3] = bitsLen >>> 16;
  padded[padded.length - 2] = bitsLen >>> 8; padded[padded.length - 1] = bitsLen;
  for (let off = 0; off < padded.length; off += 64) block(h, padded, off);
  return Array.from(h, w => w >>> 0);
}

// search counts up from 0 until SHA-256(value + "." + n) has `bits` zero bits.
export function search(value, bits) {
  const prefix = new TextEncoder().encode(value + '.');
  const full = prefix.length >> 6;
  const mid = Int32Array.from(IV);
  for (let i = 0; i < full; i++) block(mid, prefix, i * 64);
  const tail = prefix.subarray(full * 64);
  const buf = new Uint8Array(128);
  buf.set(tail);
  const h = new Int32Array(8);
  for (let n = 0; ; n++) {
    const digits = String(n);
    let len = tail.length;
    for (let i = 0; i < digits.length; i++) buf[len++] = digits.charCodeAt(i);
    const total = len + 9 <= 64 ? 64 : 128;
    buf[len] = 0x80;
    buf.fill(0, len + 1, total);
    const bitsLen = (prefix.length + digits.length) * 8;
    buf[total - 4] = bitsLen >>> 24; buf[total - 3] = bitsLen >>> 16; buf[total - 2] = bitsLen >>> 8; buf[total - 1] = bitsLen;
    h.set(mid);
    block(h, buf, 0);
    if (total === 128) block(h, buf, 64);
    if (zeroBits(h) >= bits) return digits;
  }
}
