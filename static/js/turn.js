// Telling a visitor whose tab is in the background that it is their turn: a
// short tone and a notification (the page's title changes too, in main.js).
// Browsers play sound only after the visitor has interacted with the page, so
// the audio is unlocked at their first click or key press, never before; a
// notification needs the visitor's permission, asked only when they press the
// "notify me" button, never on load.

let audio = null;        // an AudioContext made in the visitor's first interaction
let notification = null; // the notification shown, closed when the visitor is back

// armSound waits for the visitor's first interaction and makes the audio
// context then (suspended until it is needed).
export function armSound() {
  const unlock = () => {
    removeEventListener('pointerdown', unlock, true);
    removeEventListener('keydown', unlock, true);
    const Context = window.AudioContext || window.webkitAudioContext;
    if (!Context || audio) return;
    try {
      audio = new Context();
      audio.suspend().catch(() => { /* it runs, silent, until the chime */ });
    } catch { audio = null; }
  };
  addEventListener('pointerdown', unlock, true);
  addEventListener('keydown', unlock, true);
}

// chime plays two short rising tones, generated (no sound file to fetch),
// when the visitor's interaction unlocked the audio; it says whether it did.
export function chime() {
  if (!audio) return false;
  const play = () => {
    const t0 = audio.currentTime + 0.03;
    for (const [freq, at] of [[660, 0], [880, 0.2]]) {
      const osc = audio.createOscillator();
      const gain = audio.createGain();
      osc.type = 'sine';
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.0001, t0 + at);
      gain.gain.exponentialRampToValueAtTime(0.25, t0 + at + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, t0 + at + 0.18);
      osc.connect(gain).connect(audio.destination);
      osc.start(t0 + at);
      osc.stop(t0 + at + 0.2);
    }
    setTimeout(() => audio.suspend().catch(() => {}), 1000);
  };
  audio.resume().then(play, () => { /* the browser refused: the title and notification remain */ });
  return true;
}

// canNotify says whether this browser shows notifications from a page
// (a secure context: https or the loopback of make dev).
export function canNotify() {
  return typeof Notification === 'function' && window.isSecureContext !== false;
}

// permission is 'granted', 'denied', 'default' (not asked yet) or
// 'unsupported'.
export function permission() {
  return canNotify() ? Notification.permission : 'unsupported';
}

// askPermission asks the visitor, from their press of the "notify me" button.
export async function askPermission() {
  if (!canNotify()) return 'unsupported';
  try { return await Notification.requestPermission(); } catch { return Notification.permission; }
}

// notify shows a notification where the visitor allowed them; a click on it
// brings the waiting room's tab to the front. It says whether it showed one.
export function notify(title, body, lang, tag) {
  if (permission() !== 'granted') return false;
  try {
    notification = new Notification(title, { body, lang, tag });
    notification.onclick = () => { window.focus(); closeNotification(); };
    return true;
  } catch {
    return false; // Chrome on Android allows notifications only from a service worker
  }
}

export function closeNotification() {
  if (notification) notification.close();
  notification = null;
}
