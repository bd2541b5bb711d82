// Starts the app. A file rather than an inline script, so the Content-Security-Policy
// can allow scripts from this server only.
import init from '/pkg/trellis_web.js';

// The app renders while `init` runs (its `main` mounts it), so the loading shell from
// index.html goes in the same task: no frame shows both.
function leaveShell() {
  document.getElementById('boot')?.remove();
}

// A browser without WebAssembly, or a module that failed to download, says so instead of
// loading for ever.
function failed(error) {
  const status = document.querySelector('#boot .boot-status');
  if (status) {
    status.textContent = 'Trellis could not start: ' + error + '. Reload the page to try again.';
    status.setAttribute('role', 'alert');
  }
  console.error(error);
}

// The loading view is shown before the app replaces it. When the module is at hand at once (a
// warm cache, a fast network) the app would otherwise take over before the browser has shown a
// frame, and the page would count as showing nothing until the app had rendered. Chromium
// reports a page's largest paint once a frame is on screen; elsewhere two animation frames
// stand for it. A hidden tab shows no frames: it waits 200 ms at most.
function loadingViewShown() {
  return new Promise((resolve) => {
    setTimeout(resolve, 200);
    if (PerformanceObserver.supportedEntryTypes?.includes('largest-contentful-paint')) {
      new PerformanceObserver((_, observer) => {
        observer.disconnect();
        resolve();
      }).observe({ type: 'largest-contentful-paint', buffered: true });
    } else {
      requestAnimationFrame(() => requestAnimationFrame(() => resolve()));
    }
  });
}

// wasm-bindgen's loader finds its module next to itself, under /pkg/ (both renamed by the build).
loadingViewShown().then(() => init()).then(leaveShell, failed);
