//! First-start setup: the token-signing secret and the bootstrap admin.

use super::{jwt, password, Role};
use crate::store::{DynStore, NewUser};
use anyhow::Result;
use rand::distr::{Alphanumeric, SampleString};

const JWT_SECRET_KEY: &str = "jwt_secret";

/// The configured secret, else the one kept in the database (generated on first start).
/// Keeping it in the database lets every process sharing it verify every token.
pub async fn signing_secret(store: &DynStore, configured: Option<&str>) -> Result<String> {
    match configured {
        Some(secret) if secret.len() < 32 => {
            anyhow::bail!("TRELLIS_JWT_SECRET must be at least 32 characters")
        }
        Some(secret) => Ok(secret.to_owned()),
        None => Ok(store.setting_or_init(JWT_SECRET_KEY, &jwt::generate_secret()).await?),
    }
}

/// Creates user `admin` on an empty database. Returns the password when this call created
/// the user with a generated one, so the caller can show it exactly once.
pub async fn ensure_admin(store: &DynStore, configured: Option<&str>) -> Result<Option<String>> {
    if store.count_users().await? > 0 {
        return Ok(None);
    }
    let password = match configured {
        Some(p) => {
            password::check_strength(p).map_err(|e| anyhow::anyhow!("TRELLIS_ADMIN_PASSWORD: {e}"))?;
            p.to_owned()
        }
        None => Alphanumeric.sample_string(&mut rand::rng(), 20),
    };
    let hash = password::hash(password.clone()).await?;
    // Another process may bootstrap at the same moment; the unique username decides.
    let created = store.insert_user(&NewUser::new("admin", hash, Role::Admin)).await?;
    Ok((created && configured.is_none()).then_some(password))
}
