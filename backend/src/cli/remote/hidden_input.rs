//! A line typed with terminal echo off (a password), with echo turned back on however the
//! prompt ends: by Enter, or by Ctrl-C, which would otherwise leave the user's shell without echo.

use nix::sys::termios::{tcgetattr, tcsetattr, LocalFlags, SetArg, Termios};
use std::io::BufRead;

/// The exit status of a command interrupted by Ctrl-C (128 + SIGINT), as shells report it.
const INTERRUPTED: i32 = 130;

/// Reads one line from the terminal without echoing it. Ctrl-C restores the terminal and ends
/// the process as an interrupted command would.
pub async fn read_hidden_line() -> std::io::Result<String> {
    let echo_off = EchoOff::new();
    let reading = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map(|_| line)
    });
    let read = tokio::select! {
        read = reading => read.unwrap_or_else(|e| Err(std::io::Error::other(e))),
        _ = tokio::signal::ctrl_c() => {
            drop(echo_off);
            eprintln!();
            std::process::exit(INTERRUPTED);
        }
    };
    drop(echo_off);
    eprintln!();
    // Listening for Ctrl-C replaced its default action for good: keep it ending the process.
    tokio::spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            std::process::exit(INTERRUPTED);
        }
    });
    read
}

/// Echo is off while this lives.
struct EchoOff {
    saved: Option<Termios>,
}

impl EchoOff {
    fn new() -> Self {
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin).ok();
        if let Some(saved) = &saved {
            let mut quiet = saved.clone();
            quiet.local_flags.remove(LocalFlags::ECHO);
            let _ = tcsetattr(&stdin, SetArg::TCSANOW, &quiet);
        }
        EchoOff { saved }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = tcsetattr(std::io::stdin(), SetArg::TCSANOW, saved);
        }
    }
}
