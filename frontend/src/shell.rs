//! What the layout around every signed-in page decides without a browser: the page's title from
//! its address, and the way to sign-in and back.

use crate::urls::encode_component;

/// The browser tab's title: "Instances · Trellis".
pub fn document_title(page: &str) -> String {
    format!("{page} · Trellis")
}

/// A page about one workflow, named by it first: "Orders · Designer". A name that is all
/// white space says nothing, so the page's own name stands alone then.
pub fn workflow_page_title(workflow: &str, page: &str) -> String {
    match workflow.trim() {
        "" => page.to_owned(),
        name => format!("{name} · {page}"),
    }
}

/// The name of the page at `path`, for its title (`pages.rs`).
pub fn page_title(path: &str) -> &'static str {
    crate::pages::page_at(path).map_or(crate::pages::NOT_FOUND, |page| page.title)
}

/// The sign-in page, returning to `here` (path and query) once signed in; home needs no return.
pub fn sign_in_page(here: &str) -> String {
    match here {
        "" | "/" => "/login".to_owned(),
        here => format!("/login?next={}", encode_component(here)),
    }
}

/// Where to go after signing in: the `next` the sign-in page was given when it is an address in
/// this app (never another site: `//host` and `/\host` are), else home.
pub fn after_sign_in(next: Option<&str>) -> String {
    match next {
        Some(next) if next.starts_with('/') && !next.starts_with("//") && !next.starts_with("/\\") => next.to_owned(),
        _ => "/".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_has_a_title_of_its_own() {
        assert_eq!(page_title("/"), "Dashboard");
        assert_eq!(page_title("/workflows"), "Workflows");
        assert_eq!(page_title("/workflows/w1"), "Designer");
        assert_eq!(page_title("/workflows/w1/triggers"), "Triggers");
        assert_eq!(page_title("/instances/"), "Instances");
        assert_eq!(page_title("/instances/i1"), "Run");
        assert_eq!(page_title("/audit"), "Audit log");
        assert_eq!(page_title("/secrets"), "Secrets");
        assert_eq!(page_title("/compare"), "Compare runs");
        assert_eq!(page_title("/workflows/w1/runs"), "Page not found");
        assert_eq!(document_title("Jobs"), "Jobs · Trellis");
    }

    #[test]
    fn a_page_about_one_workflow_is_named_by_it_first() {
        assert_eq!(document_title(&workflow_page_title("Orders", "Designer")), "Orders · Designer · Trellis");
        assert_eq!(workflow_page_title("  Orders ", "Run"), "Orders · Run");
        assert_eq!(workflow_page_title(" ", "Run"), "Run");
    }

    #[test]
    fn sign_in_returns_to_the_page_that_needed_it() {
        assert_eq!(sign_in_page("/"), "/login");
        assert_eq!(sign_in_page("/instances?status=failed"), "/login?next=%2Finstances%3Fstatus%3Dfailed");
        assert_eq!(after_sign_in(Some("/instances?status=failed")), "/instances?status=failed");
        assert_eq!(after_sign_in(None), "/");
    }

    #[test]
    fn sign_in_never_sends_anyone_to_another_site() {
        for next in ["//evil.example", "/\\evil.example", "https://evil.example", ""] {
            assert_eq!(after_sign_in(Some(next)), "/", "{next}");
        }
    }
}
