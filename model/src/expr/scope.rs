//! What an expression can reach in its context, read from its text without compiling it.
//!
//! The server sends a node's expressions to a sandbox worker with the context they run over.
//! A context can be megabytes (an upstream `http` node's body) where an expression reads one
//! field of it; sending all of it on every evaluation would make each step cost what is in
//! scope rather than what is used. [`narrow`] keeps only the parts the texts can reach.
//!
//! It reads the text, never compiles it: compiling is user code's work and happens in the
//! worker (checking a text evaluates its constant expressions, which can allocate without
//! bound).
//! The reading is conservative: every place a root name (`input`, `nodes`, ...) appears as
//! a word starts a path of static accessors (`.name`, `['name']`, `["name"]`); the path ends
//! at the first accessor that is not static (`[i]`, `[0]`, a slice, a filter, an operator),
//! and the whole value at that point is kept. A method call (`x.items()`) keeps its receiver.
//! So a use the reader does not understand keeps more, never less: an expression sees the
//! same values in the narrowed context as in the whole one. `debug()` shows the whole
//! context, so a text that mentions it gets the whole context.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `context` (an object of root names) with only what `texts` can reach.
pub fn narrow(texts: &[&str], context: &Value) -> Value {
    let Value::Object(roots) = context else { return context.clone() };
    if texts.iter().any(|t| t.contains("debug")) {
        return context.clone();
    }
    let mut kept = Map::new();
    for (name, value) in roots {
        let mut reach = Reach::default();
        for text in texts {
            for path in paths_from(text, name) {
                reach.add(&path);
            }
        }
        if reach.used {
            kept.insert(name.clone(), reach.keep(value));
        }
    }
    Value::Object(kept)
}

/// Which entries of the object named `root` `texts` can reach: [`narrow`]'s reading one level
/// down, for a caller that builds the context itself and so need not build what no text
/// reaches (an attempt's `nodes`, one entry per node of its instance).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reached {
    Nothing,
    Whole,
    Keys(Vec<String>),
}

pub fn reached(texts: &[&str], root: &str) -> Reached {
    let mut reach = Reach::default();
    for text in texts {
        if text.contains("debug") {
            return Reached::Whole;
        }
        for path in paths_from(text, root) {
            reach.add(&path);
        }
    }
    match reach {
        Reach { used: false, .. } => Reached::Nothing,
        Reach { whole: true, .. } => Reached::Whole,
        Reach { keys, .. } => Reached::Keys(keys.into_keys().collect()),
    }
}

/// The parts of one root that are reached: a trie of keys, where `whole` ends a path.
#[derive(Default)]
struct Reach {
    used: bool,
    whole: bool,
    keys: BTreeMap<String, Reach>,
}

impl Reach {
    fn add(&mut self, path: &[String]) {
        self.used = true;
        match path.split_first() {
            None => self.whole = true,
            Some((key, rest)) => self.keys.entry(key.clone()).or_default().add(rest),
        }
    }

    fn keep(&self, value: &Value) -> Value {
        match value {
            Value::Object(fields) if !self.whole => Value::Object(
                self.keys.iter().filter_map(|(key, reach)| Some((key.clone(), reach.keep(fields.get(key)?)))).collect(),
            ),
            other => other.clone(),
        }
    }
}

/// Every static path that follows a use of `root` in `text`.
pub(crate) fn paths_from(text: &str, root: &str) -> Vec<Vec<String>> {
    let bytes = text.as_bytes();
    let mut paths = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find(root) {
        let start = from + found;
        let end = start + root.len();
        from = end;
        let starts_word = start == 0 || !is_ident(bytes[start - 1]);
        let ends_word = end == bytes.len() || !is_ident(bytes[end]);
        if starts_word && ends_word {
            paths.push(Chain { bytes, at: end }.path());
        }
    }
    paths
}

/// A reader of the accessors after a root name.
struct Chain<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Chain<'_> {
    fn path(mut self) -> Vec<String> {
        let mut path = Vec::new();
        while let Some(key) = self.accessor() {
            path.push(key);
        }
        self.skip_space();
        if self.peek() == Some(b'(') {
            // `a.b.c()` calls a method of `a.b`: it needs all of `a.b`.
            path.pop();
        }
        path
    }

    /// The next static key, if the next accessor is one.
    fn accessor(&mut self) -> Option<String> {
        let save = self.at;
        self.skip_space();
        let key = match self.peek()? {
            b'.' => {
                self.at += 1;
                self.skip_space();
                self.ident()
            }
            b'[' => {
                self.at += 1;
                self.skip_space();
                let key = self.quoted();
                self.skip_space();
                key.filter(|_| self.eat(b']'))
            }
            _ => None,
        };
        if key.is_none() {
            self.at = save;
        }
        key
    }

    fn ident(&mut self) -> Option<String> {
        let start = self.at;
        if !self.peek().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_') {
            return None;
        }
        while self.peek().is_some_and(is_ident) {
            self.at += 1;
        }
        if self.peek().is_some_and(|b| !b.is_ascii()) {
            // A name that goes on past ASCII is not read as a shorter one: the path stops.
            return None;
        }
        Some(String::from_utf8_lossy(&self.bytes[start..self.at]).into_owned())
    }

    /// A string literal without escapes (one with escapes is not read: the path stops).
    fn quoted(&mut self) -> Option<String> {
        let quote = self.peek().filter(|q| matches!(q, b'\'' | b'"'))?;
        let start = self.at + 1;
        let len = self.bytes[start..].iter().position(|&b| b == quote || b == b'\\')?;
        if self.bytes[start + len] != quote {
            return None;
        }
        self.at = start + len + 1;
        std::str::from_utf8(&self.bytes[start..start + len]).ok().map(str::to_owned)
    }

    fn eat(&mut self, byte: u8) -> bool {
        let matched = self.peek() == Some(byte);
        if matched {
            self.at += 1;
        }
        matched
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[cfg(test)]
mod tests;
