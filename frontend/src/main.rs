//! trellis-web: the Trellis single-page app. The browser app is built for wasm32 by
//! `cargo xtask`; native builds carry only the pure helpers so their unit tests run with `cargo test`.

// The pure modules are used only by the browser components, so natively they look dead.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod alert_rules;
mod approvals;
mod audit_words;
mod bulk;
mod charts;
mod compare;
mod designer;
mod error;
mod format;
mod instance_filter;
mod mutation;
mod paged;
mod pages;
mod run;
mod run_form;
mod saved_views;
mod schema_example;
mod shell;
mod transfer;
mod urls;
mod webhook_example;

#[cfg(target_arch = "wasm32")]
mod api;
#[cfg(target_arch = "wasm32")]
mod api_admin;
#[cfg(target_arch = "wasm32")]
mod api_alerts;
#[cfg(target_arch = "wasm32")]
mod api_approvals;
#[cfg(target_arch = "wasm32")]
mod api_limits;
#[cfg(target_arch = "wasm32")]
mod api_secrets;
#[cfg(target_arch = "wasm32")]
mod api_triggers;
#[cfg(target_arch = "wasm32")]
mod api_views;
#[cfg(target_arch = "wasm32")]
mod app;
#[cfg(target_arch = "wasm32")]
mod components;

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("trellis-web runs in a browser: build it with `cargo xtask run`, which serves it.");
}
