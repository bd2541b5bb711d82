//! Every page behind sign-in in one table: its address, the title its tab shows, its entry in
//! the header's sections (if it has one) and the least role that may use it. The header
//! (`components/app_header.rs`) and the titles (`shell.rs`) read it; the router (`app.rs`)
//! routes each row's `path` to its component. A new page is a row here and a route there.

use trellis_model::Role;

/// One page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// The route's pattern, as `app.rs` routes it: `:id` stands for any one segment.
    pub path: &'static str,
    pub title: &'static str,
    /// Its label in the header's sections; `None` for a page reached from another.
    pub section: Option<&'static str>,
    /// The least role offered it (the server refuses the rest either way).
    pub least: Role,
}

const fn page(path: &'static str, title: &'static str, section: Option<&'static str>, least: Role) -> Page {
    Page { path, title, section, least }
}

/// The pages, sections in the header's order.
pub const PAGES: &[Page] = &[
    page("/", "Dashboard", Some("Dashboard"), Role::Viewer),
    page("/workflows", "Workflows", Some("Workflows"), Role::Viewer),
    page("/instances", "Instances", Some("Instances"), Role::Viewer),
    page("/failures", "Failures", Some("Failures"), Role::Viewer),
    page("/triggers", "Triggers", Some("Triggers"), Role::Viewer),
    page("/jobs", "Jobs", Some("Jobs"), Role::Viewer),
    // Not a header section: one more wraps the admin's header to a second line at 1280 px,
    // which shifts the designer under the pointer. Reached from the designer's Shared limit
    // field and the Workflows page.
    page("/limits", "Limits", None, Role::Viewer),
    // Editors see secrets' names to reference them, and manage alerts.
    page("/secrets", "Secrets", Some("Secrets"), Role::Editor),
    page("/alerts", "Alerts", Some("Alerts"), Role::Editor),
    page("/users", "Users", Some("Users"), Role::Admin),
    page("/retention", "Retention", Some("Retention"), Role::Admin),
    page("/audit", "Audit log", Some("Audit"), Role::Admin),
    page("/cluster", "Cluster", Some("Cluster"), Role::Admin),
    page("/workflows/:id", "Designer", None, Role::Viewer),
    page("/workflows/:id/triggers", "Triggers", None, Role::Viewer),
    page("/instances/:id", "Run", None, Role::Viewer),
    page("/compare", "Compare runs", None, Role::Viewer),
    // Not a section either (the same 1280 px): the header has a link of its own for it, with
    // the count of approvals waiting for the signed-in person.
    page("/approvals", "Approvals", None, Role::Viewer),
    page("/approvals/:id", "Approval", None, Role::Viewer),
];

/// The title of a page whose address matches none.
pub const NOT_FOUND: &str = "Page not found";

/// The page at `path` (a trailing or doubled `/` changes nothing).
pub fn page_at(path: &str) -> Option<&'static Page> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    PAGES.iter().find(|page| {
        let pattern: Vec<&str> = page.path.split('/').filter(|s| !s.is_empty()).collect();
        pattern.len() == segments.len() && pattern.iter().zip(&segments).all(|(p, s)| p.starts_with(':') || p == s)
    })
}

/// The sections of the header `role` is offered (everyone's while it is not known): label and
/// address.
pub fn sections(role: Option<Role>) -> impl Iterator<Item = (&'static str, &'static str)> {
    let role = role.unwrap_or(Role::Viewer);
    PAGES.iter().filter(move |page| role >= page.least).filter_map(|page| page.section.map(|label| (label, page.path)))
}

/// Whether the section at `href` is where `path` is: the page itself or one under it.
pub fn section_holds(href: &str, path: &str) -> bool {
    match href {
        "/" => path == "/",
        href => path == href || path.strip_prefix(href).is_some_and(|rest| rest.starts_with('/')),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_has_an_address_of_its_own() {
        for (i, page) in PAGES.iter().enumerate() {
            let address = page.path.replace(":id", "x1");
            assert_eq!(page_at(&address), Some(&PAGES[i]), "{}", page.path);
        }
        assert_eq!(page_at("/workflows/w1/runs"), None);
        assert_eq!(page_at("/instances/"), page_at("/instances"));
    }

    #[test]
    fn each_role_is_offered_the_sections_it_may_use() {
        let labels = |role| sections(role).map(|(label, _)| label).collect::<Vec<_>>();
        let everyone = ["Dashboard", "Workflows", "Instances", "Failures", "Triggers", "Jobs"];
        assert_eq!(labels(None), everyone);
        assert_eq!(labels(Some(Role::Operator)), everyone);
        assert!(labels(Some(Role::Editor)).ends_with(&["Secrets", "Alerts"]));
        assert!(labels(Some(Role::Admin)).ends_with(&["Secrets", "Alerts", "Users", "Retention", "Audit", "Cluster"]));
    }

    #[test]
    fn a_section_holds_its_pages_and_only_them() {
        assert!(section_holds("/", "/") && !section_holds("/", "/workflows"));
        assert!(section_holds("/workflows", "/workflows/w1/triggers"));
        assert!(!section_holds("/workflows", "/workflowsx"));
        assert!(!section_holds("/triggers", "/workflows/w1/triggers"));
    }
}
