// solve runs the join challenge's search (challenge.js) in a worker, so the
// page stays responsive, and resolves with the solution. The worker's bundle
// imports nothing, so a browser that cannot start it as a module starts it as
// a classic script; the search itself stays out of the page's bundle (the
// worker carries it).
export function solve(value, bits) {
  const open = opts => new Worker(new URL('./challenge-worker.js', import.meta.url), opts);
  return new Promise((resolve, reject) => {
    const run = (opts, next) => {
      let w;
      try { w = open(opts); } catch (e) { next(e); return; }
      w.onmessage = e => { w.terminate(); resolve(e.data); };
      w.onerror = e => { w.terminate(); next(e); };
      w.postMessage({ value, bits });
    };
    run({ type: 'module' }, () => run({}, e => reject(new Error('the join challenge needs a web worker: ' + (e && e.message)))));
  });
}
