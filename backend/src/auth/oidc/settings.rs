//! Single sign-on's settings, read and checked once at start: a configured provider with a
//! missing piece stops the server with a message naming it, rather than failing at the
//! first sign-in.

use super::mapping::RoleMap;
use crate::config::ServeConfig;
use secrecy::SecretString;
use url::Url;

/// The callback's path under the public URL (the redirect URI registered at the provider).
pub const CALLBACK_PATH: &str = "/api/v1/auth/oidc/callback";
/// Where the browser starts a sign-in.
pub const LOGIN_PATH: &str = "/api/v1/auth/oidc/login";

#[derive(Debug, Clone)]
pub struct OidcSettings {
    /// As configured; the discovery document's `issuer` must equal it.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<SecretString>,
    pub name: String,
    pub scopes: Vec<String>,
    pub groups_claim: String,
    pub roles: RoleMap,
    pub session_secs: u64,
    pub link_local_users: bool,
    /// `{TRELLIS_PUBLIC_URL}/api/v1/auth/oidc/callback`.
    pub redirect_uri: String,
    /// `TRELLIS_PUBLIC_URL`: where the provider sends the browser after signing out.
    pub public_url: String,
}

impl OidcSettings {
    /// `None` when no issuer is set (no single sign-on).
    pub fn from_config(config: &ServeConfig) -> Result<Option<OidcSettings>, String> {
        let args = &config.oidc;
        let Some(issuer) = args.issuer.as_deref().map(str::trim).filter(|i| !i.is_empty()) else {
            return Ok(None);
        };
        Url::parse(issuer).map_err(|e| format!("TRELLIS_OIDC_ISSUER `{issuer}` is not a URL: {e}"))?;
        let client_id = args
            .client_id
            .clone()
            .filter(|c| !c.trim().is_empty())
            .ok_or("TRELLIS_OIDC_ISSUER is set but TRELLIS_OIDC_CLIENT_ID is not: set the client id registered at the provider")?;
        let public_url = config
            .public_url
            .as_deref()
            .map(|u| u.trim_end_matches('/').to_owned())
            .ok_or("single sign-on needs TRELLIS_PUBLIC_URL (the address browsers reach Trellis at): the provider redirects to {TRELLIS_PUBLIC_URL}/api/v1/auth/oidc/callback")?;
        Url::parse(&public_url).map_err(|e| format!("TRELLIS_PUBLIC_URL `{public_url}` is not a URL: {e}"))?;
        let mut scopes: Vec<String> = args.scopes.split_whitespace().map(str::to_owned).collect();
        if !scopes.iter().any(|s| s == "openid") {
            scopes.insert(0, "openid".into());
        }
        let groups_claim = args.groups_claim.trim();
        if groups_claim.is_empty() || groups_claim.split('.').any(str::is_empty) {
            return Err(format!("TRELLIS_OIDC_GROUPS_CLAIM `{groups_claim}` is not a claim name or a dot path"));
        }
        Ok(Some(OidcSettings {
            issuer: issuer.to_owned(),
            client_id,
            client_secret: args.client_secret.clone().filter(|s| !s.is_empty()).map(SecretString::from),
            name: args.name.trim().to_owned(),
            scopes,
            groups_claim: groups_claim.to_owned(),
            roles: RoleMap::parse(&args.role_map, args.default_role.as_deref())?,
            session_secs: args.session_secs.max(60),
            link_local_users: args.link_local_users,
            redirect_uri: format!("{public_url}{CALLBACK_PATH}"),
            public_url,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(issuer: &str) -> ServeConfig {
        let mut c = ServeConfig::local();
        c.oidc.issuer = Some(issuer.into());
        c.oidc.client_id = Some("trellis".into());
        c.public_url = Some("https://trellis.example/".into());
        c
    }

    #[test]
    fn no_issuer_is_no_single_sign_on() {
        assert!(OidcSettings::from_config(&ServeConfig::local()).unwrap().is_none());
    }

    #[test]
    fn the_redirect_uri_comes_from_the_public_url() {
        let s = OidcSettings::from_config(&config("https://idp.example")).unwrap().unwrap();
        assert_eq!(s.redirect_uri, "https://trellis.example/api/v1/auth/oidc/callback");
        assert_eq!(s.scopes, ["openid", "profile", "email"]);
    }

    #[test]
    fn a_missing_piece_is_named() {
        let mut c = config("https://idp.example");
        c.public_url = None;
        assert!(OidcSettings::from_config(&c).unwrap_err().contains("TRELLIS_PUBLIC_URL"));
        let mut c = config("https://idp.example");
        c.oidc.client_id = None;
        assert!(OidcSettings::from_config(&c).unwrap_err().contains("TRELLIS_OIDC_CLIENT_ID"));
        assert!(OidcSettings::from_config(&config("not a url")).unwrap_err().contains("TRELLIS_OIDC_ISSUER"));
        let mut c = config("https://idp.example");
        c.oidc.role_map = "ops=boss".into();
        assert!(OidcSettings::from_config(&c).unwrap_err().contains("`ops=boss`"));
    }
}
