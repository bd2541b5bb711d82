//! Saved views as the navigation shows them: each view's path is an instances-list address, and
//! its live count is what that list counts — `GET /instances?limit=1&<the view's query>`, summing
//! the counts of the view's statuses (all of them when it names none), since the list counts
//! every status whatever its `status` filter.

use crate::urls::API;
use trellis_model::api::StatusCounts;
use trellis_model::InstanceStatus;

/// The longest name the server keeps (`http/resources/views.rs`).
pub const MAX_NAME_CHARS: usize = 100;

/// The query of a view's path, without what only the page uses (a followed job, a cursor, the
/// page size); `None` for a path that is not the instances list.
fn list_query(path: &str) -> Option<Vec<&str>> {
    let query = match path.strip_prefix("/instances")? {
        "" => "",
        rest => rest.strip_prefix('?')?,
    };
    let page_only = |pair: &&str| ["job", "cursor", "limit"].contains(&pair.split('=').next().unwrap_or_default());
    Some(query.split('&').filter(|p| !p.is_empty()).filter(|p| !page_only(p)).collect())
}

/// `GET /instances` asking for the counts of the view's list only (one row).
pub fn count_url(path: &str) -> Option<String> {
    let mut url = format!("{API}/instances?limit=1");
    for pair in list_query(path)? {
        url.push('&');
        url.push_str(pair);
    }
    Some(url)
}

/// The path a view saves for the instances list at `search` (the address's `?…`, maybe empty):
/// the list with its filters, without what only this visit uses.
pub fn path_of(search: &str) -> String {
    let query = list_query(&format!("/instances?{}", search.trim_start_matches('?'))).unwrap_or_default().join("&");
    match query.as_str() {
        "" => "/instances".to_owned(),
        q => format!("/instances?{q}"),
    }
}

/// The statuses the view's path filters on (none: any).
fn statuses(path: &str) -> Vec<InstanceStatus> {
    let pairs = list_query(path).unwrap_or_default();
    pairs
        .iter()
        .filter_map(|p| p.strip_prefix("status="))
        .flat_map(|v| v.replace("%2C", ",").replace("%2c", ",").split(',').map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|name| InstanceStatus::parse(&name))
        .collect()
}

/// How many instances the view shows, from its list's counts.
pub fn matched(path: &str, counts: &StatusCounts) -> i64 {
    match statuses(path) {
        wanted if wanted.is_empty() => counts.0.values().sum(),
        wanted => InstanceStatus::ALL.iter().filter(|s| wanted.contains(s)).map(|s| counts.get(*s)).sum(),
    }
}

/// A name the server will keep, trimmed, or why not (checked again there).
pub fn entered_name(raw: &str) -> Result<String, String> {
    let name = raw.trim();
    if name.is_empty() {
        return Err("Give the view a name.".to_owned());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("A view's name has at most {MAX_NAME_CHARS} characters."));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_asks_the_list_for_one_row_with_the_views_filters_only() {
        assert_eq!(count_url("/instances").as_deref(), Some("/api/v1/instances?limit=1"));
        assert_eq!(
            count_url("/instances?workflow=abc&status=failed,timed_out&job=j1&input.order=4411").as_deref(),
            Some("/api/v1/instances?limit=1&workflow=abc&status=failed,timed_out&input.order=4411")
        );
        assert_eq!(count_url("/instances?limit=500&cursor=x").as_deref(), Some("/api/v1/instances?limit=1"));
        assert_eq!(count_url("//evil.example/instances"), None);
        assert_eq!(count_url("/instancesx?a=1"), None);
    }

    #[test]
    fn the_count_sums_the_views_statuses_or_all_of_them() {
        let counts = StatusCounts::of([
            (InstanceStatus::Failed, 3),
            (InstanceStatus::Succeeded, 10),
            (InstanceStatus::TimedOut, 1),
        ]);
        assert_eq!(matched("/instances", &counts), 14);
        assert_eq!(matched("/instances?status=failed,timed_out", &counts), 4);
        assert_eq!(matched("/instances?status=failed%2Ctimed_out", &counts), 4);
        assert_eq!(matched("/instances?status=succeeded&workflow=w", &counts), 10);
        assert_eq!(
            matched("/instances?status=nonsense", &counts),
            14,
            "an unusable status filters nothing, as on the page"
        );
    }

    #[test]
    fn the_saved_path_is_the_list_with_its_filters_but_not_the_followed_job() {
        assert_eq!(path_of(""), "/instances");
        assert_eq!(path_of("?job=j1"), "/instances");
        assert_eq!(path_of("?status=failed&job=j1&key=a%26b"), "/instances?status=failed&key=a%26b");
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(entered_name("  Failed orders "), Ok("Failed orders".to_owned()));
        assert!(entered_name("   ").is_err());
        assert!(entered_name(&"é".repeat(100)).is_ok());
        assert!(entered_name(&"é".repeat(101)).is_err());
    }
}
