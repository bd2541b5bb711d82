//! Group → role: which role a user's groups give under `TRELLIS_OIDC_ROLE_MAP`, and why.
//!
//! Group names are compared without case and without a leading `/` (Keycloak's full group
//! paths), so `/Trellis-Admins` matches a rule for `trellis-admins`. The highest role any
//! group maps to wins; no mapped group falls back to `TRELLIS_OIDC_DEFAULT_ROLE`, and without
//! one the user is refused. Re-derived at every sign-in, so leaving a group demotes.

use serde_json::Value;
use trellis_model::Role;

/// One `group=role` pair as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    /// The group as compared: lower case, no leading `/`.
    group: String,
    role: Role,
    /// As the operator wrote it, to name it in explanations.
    text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleMap {
    rules: Vec<Rule>,
    default: Option<Role>,
}

/// What the mapping gives for some groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `None`: refused.
    pub role: Option<Role>,
    /// The rule that gave the role: `group=role` as configured, or `default=role`.
    pub rule: Option<String>,
    pub explanation: String,
}

impl RoleMap {
    /// Parses `group=role,group=role` (spaces around names ignored; an empty text maps no group).
    pub fn parse(text: &str, default: Option<&str>) -> Result<RoleMap, String> {
        let mut rules = Vec::new();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((group, role)) = pair.rsplit_once('=') else {
                return Err(format!("TRELLIS_OIDC_ROLE_MAP: `{pair}` is not `group=role`"));
            };
            let role: Role = role.trim().parse().map_err(|e| format!("TRELLIS_OIDC_ROLE_MAP: `{pair}`: {e}"))?;
            let group = normalize(group);
            if group.is_empty() {
                return Err(format!("TRELLIS_OIDC_ROLE_MAP: `{pair}` names no group"));
            }
            rules.push(Rule { group, role, text: pair.to_owned() });
        }
        let default = match default.map(str::trim).filter(|d| !d.is_empty()) {
            Some(d) => Some(d.parse().map_err(|e| format!("TRELLIS_OIDC_DEFAULT_ROLE: {e}"))?),
            None => None,
        };
        Ok(RoleMap { rules, default })
    }

    pub fn decide(&self, groups: &[String]) -> Decision {
        let mine: Vec<String> = groups.iter().map(|g| normalize(g)).collect();
        let best = self.rules.iter().filter(|r| mine.contains(&r.group)).max_by_key(|r| r.role);
        match (best, self.default) {
            (Some(rule), _) => Decision {
                role: Some(rule.role),
                rule: Some(rule.text.clone()),
                explanation: format!(
                    "the rule `{}` gives {} (the highest role any of the groups maps to)",
                    rule.text, rule.role
                ),
            },
            (None, Some(role)) => Decision {
                role: Some(role),
                rule: Some(format!("default={role}")),
                explanation: format!("no rule maps {}; TRELLIS_OIDC_DEFAULT_ROLE gives {role}", listed(groups)),
            },
            (None, None) => Decision {
                role: None,
                rule: None,
                explanation: format!(
                    "no rule maps {} and TRELLIS_OIDC_DEFAULT_ROLE is not set, so the sign-in is refused",
                    listed(groups)
                ),
            },
        }
    }
}

/// How group names are compared: `/Ops/Team` and `ops/team` are one group.
fn normalize(group: &str) -> String {
    group.trim().trim_start_matches('/').to_lowercase()
}

fn listed(groups: &[String]) -> String {
    match groups {
        [] => "any group (the user has none)".to_owned(),
        _ => format!("any of the groups {}", groups.iter().map(|g| format!("`{g}`")).collect::<Vec<_>>().join(", ")),
    }
}

/// The groups at `path` (dots between keys, as in `realm_access.roles`) of the claims: a list
/// of strings, or one string. Anything else, or nothing there, is no groups.
pub fn groups_at(claims: &Value, path: &str) -> Vec<String> {
    let found = path.split('.').try_fold(claims, |at, key| at.get(key));
    match found {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        Some(Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn groups(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn the_highest_mapped_role_wins_and_names_its_rule() {
        let map = RoleMap::parse("ops=operator, trellis-admins=admin,devs=editor", None).unwrap();
        let d = map.decide(&groups(&["devs", "ops", "unrelated"]));
        assert_eq!(d.role, Some(Role::Editor));
        assert_eq!(d.rule.as_deref(), Some("devs=editor"));
        assert_eq!(map.decide(&groups(&["ops", "trellis-admins"])).role, Some(Role::Admin));
    }

    #[test]
    fn groups_compare_without_case_or_a_leading_slash() {
        let map = RoleMap::parse("Trellis-Admins=admin", None).unwrap();
        assert_eq!(map.decide(&groups(&["/trellis-admins"])).role, Some(Role::Admin));
        assert_eq!(map.decide(&groups(&["TRELLIS-ADMINS"])).role, Some(Role::Admin));
    }

    #[test]
    fn no_mapped_group_falls_back_to_the_default_or_is_refused() {
        let refused = RoleMap::parse("ops=operator", None).unwrap().decide(&groups(&["sales"]));
        assert_eq!(refused.role, None);
        assert!(
            refused.explanation.contains("`sales`") && refused.explanation.contains("refused"),
            "{}",
            refused.explanation
        );
        let viewer = RoleMap::parse("ops=operator", Some("viewer")).unwrap().decide(&[]);
        assert_eq!((viewer.role, viewer.rule.as_deref()), (Some(Role::Viewer), Some("default=viewer")));
    }

    #[test]
    fn a_bad_map_names_the_pair_that_is_wrong() {
        assert!(RoleMap::parse("ops=root", None).unwrap_err().contains("`ops=root`"));
        assert!(RoleMap::parse("ops", None).unwrap_err().contains("is not `group=role`"));
        assert!(RoleMap::parse("=admin", None).unwrap_err().contains("names no group"));
        assert!(RoleMap::parse("", Some("boss")).unwrap_err().contains("TRELLIS_OIDC_DEFAULT_ROLE"));
    }

    #[test]
    fn groups_are_read_at_a_dot_path_as_a_list_or_one_name() {
        let claims = json!({"groups": ["a", 7, "b"], "realm_access": {"roles": ["admin"]}, "team": "ops"});
        assert_eq!(groups_at(&claims, "groups"), groups(&["a", "b"]));
        assert_eq!(groups_at(&claims, "realm_access.roles"), groups(&["admin"]));
        assert_eq!(groups_at(&claims, "team"), groups(&["ops"]));
        assert!(groups_at(&claims, "missing.path").is_empty());
    }
}
