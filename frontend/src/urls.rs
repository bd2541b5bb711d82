//! Every URL the app builds, API and in-app, with the escaping done once and tested.

pub const API: &str = "/api/v1";

/// How many workflows one list request asks for.
pub const PAGE_SIZE: u32 = 50;

pub fn login() -> String {
    format!("{API}/auth/login")
}

pub fn logout() -> String {
    format!("{API}/auth/logout")
}

pub fn providers() -> String {
    format!("{API}/auth/providers")
}

/// Where the browser begins a single sign-on that lands on `next` (a path in the app).
pub fn sso_login(login_url: &str, next: &str) -> String {
    format!("{login_url}?return_to={}", encode_component(next))
}

pub fn me() -> String {
    format!("{API}/auth/me")
}

pub fn workflows() -> String {
    format!("{API}/workflows")
}

pub fn workflow(id: &str) -> String {
    format!("{API}/workflows/{}", encode_component(id))
}

pub fn draft(id: &str) -> String {
    format!("{}/draft", workflow(id))
}

pub fn archive(id: &str, archived: bool) -> String {
    format!("{}/{}", workflow(id), if archived { "archive" } else { "unarchive" })
}

pub fn versions(id: &str) -> String {
    format!("{}/versions", workflow(id))
}

pub fn version(id: &str, n: i64) -> String {
    format!("{}/versions/{n}", workflow(id))
}

pub fn start_instance(id: &str) -> String {
    format!("{}/instances", workflow(id))
}

pub fn instance(id: &str) -> String {
    format!("{API}/instances/{}", encode_component(id))
}

/// `POST /instances/{id}/{action}`: `cancel`, `pause`, `resume`, `signal`, `retry`.
pub fn instance_action(id: &str, action: &str) -> String {
    format!("{}/{action}", instance(id))
}

/// The instance's history as server-sent events (replayed, then live).
pub fn instance_events(id: &str) -> String {
    format!("{}/events", instance(id))
}

/// `GET /instances/{id}/nodes/{node}/items`: a page of a map node's items, maybe of one status.
pub fn map_items(id: &str, node: &str, status: &str, cursor: Option<u32>, limit: u32) -> String {
    let mut url = format!("{}/nodes/{}/items?limit={limit}", instance(id), encode_component(node));
    if !status.is_empty() {
        url.push_str(&format!("&status={}", encode_component(status)));
    }
    if let Some(c) = cursor {
        url.push_str(&format!("&cursor={c}"));
    }
    url
}

/// The designer of a workflow, in the app.
pub fn designer_page(id: &str) -> String {
    format!("/workflows/{}", encode_component(id))
}

/// An instance's page, in the app.
pub fn instance_page(id: &str) -> String {
    format!("/instances/{}", encode_component(id))
}

/// The approvals inbox, in the app.
pub const APPROVALS_PAGE: &str = "/approvals";

/// One approval's page, in the app.
pub fn approval_page(id: &str) -> String {
    format!("{APPROVALS_PAGE}/{}", encode_component(id))
}

/// `GET /approvals/{id}`.
pub fn approval(id: &str) -> String {
    format!("{API}/approvals/{}", encode_component(id))
}

/// `POST /approvals/{id}/decision`.
pub fn approval_decision(id: &str) -> String {
    format!("{}/decision", approval(id))
}

/// `GET /approvals/count`: the header badge's number.
pub fn approval_count() -> String {
    format!("{API}/approvals/count")
}

/// `GET /approvals` with `filters` (`mine=true`, `status=open`: already escaped pairs) and the
/// cursor of the page to continue from.
pub fn approval_list(filters: &[(&str, &str)], cursor: Option<&str>, limit: u32) -> String {
    let mut url = format!("{API}/approvals?limit={limit}");
    for (name, value) in filters {
        url.push_str(&format!("&{name}={}", encode_component(value)));
    }
    if let Some(cursor) = cursor {
        url.push_str(&format!("&cursor={}", encode_component(cursor)));
    }
    url
}

/// `GET /workflows` with an optional search and the cursor of the page to continue from.
/// Archived workflows are listed too when `archived`.
pub fn workflow_list(search: Option<&str>, cursor: Option<&str>, limit: u32, archived: bool) -> String {
    let mut url = format!("{API}/workflows?limit={limit}");
    if archived {
        url.push_str("&archived=true");
    }
    if let Some(q) = search.map(str::trim).filter(|q| !q.is_empty()) {
        url.push_str("&q=");
        url.push_str(&encode_component(q));
    }
    if let Some(cursor) = cursor {
        url.push_str("&cursor=");
        url.push_str(&encode_component(cursor));
    }
    url
}

/// The in-app address of the workflow list for a search, so a search can be bookmarked and reloaded.
pub fn list_page(search: &str) -> String {
    match search.trim() {
        "" => "/workflows".to_owned(),
        q => format!("/workflows?q={}", encode_component(q)),
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters, so `&`, `#`, `+` and non-ASCII
/// text in a search reach the server unchanged.
pub fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_page_has_only_a_limit() {
        assert_eq!(workflow_list(None, None, 50, false), "/api/v1/workflows?limit=50");
        assert_eq!(workflow_list(Some("  "), None, 50, false), "/api/v1/workflows?limit=50");
    }

    #[test]
    fn search_and_cursor_are_escaped() {
        assert_eq!(
            workflow_list(Some("a&b c"), Some("x+y/="), 10, false),
            "/api/v1/workflows?limit=10&q=a%26b%20c&cursor=x%2By%2F%3D"
        );
    }

    #[test]
    fn resource_urls_escape_ids() {
        assert_eq!(draft("a/b"), "/api/v1/workflows/a%2Fb/draft");
        assert_eq!(version("w", 3), "/api/v1/workflows/w/versions/3");
        assert_eq!(archive("w", false), "/api/v1/workflows/w/unarchive");
        assert_eq!(designer_page("w 1"), "/workflows/w%201");
        assert_eq!(instance_page("i"), "/instances/i");
        assert_eq!(map_items("i", "each", "", None, 20), "/api/v1/instances/i/nodes/each/items?limit=20");
        assert_eq!(
            map_items("i", "a b", "failed", Some(19), 20),
            "/api/v1/instances/i/nodes/a%20b/items?limit=20&status=failed&cursor=19"
        );
        assert_eq!(workflow_list(None, None, 5, true), "/api/v1/workflows?limit=5&archived=true");
    }

    #[test]
    fn approval_urls_escape_ids_and_cursors() {
        assert_eq!(approval_page("a b"), "/approvals/a%20b");
        assert_eq!(approval("x/y"), "/api/v1/approvals/x%2Fy");
        assert_eq!(approval_decision("x"), "/api/v1/approvals/x/decision");
        assert_eq!(approval_count(), "/api/v1/approvals/count");
        assert_eq!(approval_list(&[("mine", "true")], None, 50), "/api/v1/approvals?limit=50&mine=true");
        assert_eq!(
            approval_list(&[("status", "closed")], Some("c+1="), 20),
            "/api/v1/approvals?limit=20&status=closed&cursor=c%2B1%3D"
        );
    }

    #[test]
    fn non_ascii_is_encoded_as_utf8_bytes() {
        assert_eq!(encode_component("é"), "%C3%A9");
    }

    #[test]
    fn an_empty_search_links_to_the_plain_list() {
        assert_eq!(list_page(" "), "/workflows");
        assert_eq!(list_page("<b>"), "/workflows?q=%3Cb%3E");
    }
}
