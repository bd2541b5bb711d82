// Starts the app. A file rather than an inline script, so the Content-Security-Policy
// can allow scripts from this server only.
import init from '/pkg/trellis_web.js';
// wasm-bindgen's loader finds its module next to itself, under /pkg/ (both renamed by the build).
init();
