//! Secrets: named values a node's templates reference as `{{ secret.NAME }}`, sealed at rest
//! (`crypto.rs`: a data key per secret, wrapped by the master key, the name bound to both), the
//! master key from the environment or a key file, never the database (`master_key.rs`), and
//! redacted from everything an attempt that used them writes (`redact.rs`).
//!
//! A value is in the clear only while an attempt uses it: decrypted just before the node's
//! texts go to the sandbox (`Vault::open_for_attempt`), held in `SecretString`s that are wiped
//! when dropped. The API never answers with a value.

pub mod crypto;
pub mod master_key;
pub mod redact;

use crate::config::DatabaseConfig;
use crate::store::{DynStore, SecretChange, SecretRow, StoreError, MASTER_KEY_CHECK};
use anyhow::{bail, Context};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use chrono::Utc;
use crypto::{Key, Sealed};
use secrecy::{ExposeSecret, SecretString};
use std::sync::Arc;

pub use redact::Redactor;

/// The largest value a secret may have.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// The longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 1_000;

/// Seals and opens secrets with the master key this process was started with.
pub struct Vault {
    store: DynStore,
    master: Key,
}

/// Why an attempt's secrets could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    #[error("the secret `{0}` does not exist (it was deleted or renamed); create it or change the reference")]
    Missing(String),
    #[error(
        "the secret `{0}` does not open with this server's master key (the database was moved without its key, \
         or the key was rotated while this server ran); restart it with the database's master key"
    )]
    Unopened(String),
    #[error("the secrets could not be read: {0}")]
    Store(#[from] StoreError),
}

/// The secrets one attempt uses, in the clear, wiped when dropped.
#[derive(Default)]
pub struct Opened {
    pub values: Vec<(String, SecretString)>,
}

impl Opened {
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The redactor of these values.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(self.values.iter().map(|(name, value)| (name.as_str(), value.expose_secret())))
    }
}

impl Vault {
    /// The vault of `store` with the master key `db` names (generating the key file on a first
    /// start). Refuses, saying so, a key that is not the one the database's secrets are sealed
    /// with: a wrong key never gets as far as opening a value.
    pub async fn open(store: DynStore, db: &DatabaseConfig) -> anyhow::Result<Arc<Vault>> {
        let (master, origin) = master_key::load(db)?;
        let fresh = STANDARD.encode(crypto::check_value(&master));
        let stored = store.setting_or_init(MASTER_KEY_CHECK, &fresh).await.context("reading the key check value")?;
        let matches = STANDARD.decode(&stored).is_ok_and(|check| crypto::opens_check(&master, &check));
        if !matches {
            if let master_key::Origin::Generated(path) = &origin {
                // A key made just now for a database that has one is no use to keep.
                let _ = std::fs::remove_file(path);
            }
            bail!(
                "the master key from {origin} is not the one this database's secrets are sealed with; start with the \
                 database's key (TRELLIS_MASTER_KEY or TRELLIS_MASTER_KEY_FILE). No secret was read."
            );
        }
        tracing::info!(source = %origin, "master key ready");
        Ok(Arc::new(Vault { store, master }))
    }

    /// Seals `value` as the new secret `name`; `false` if the name is taken.
    pub async fn create(
        &self,
        name: &str,
        value: &SecretString,
        description: Option<String>,
    ) -> Result<bool, StoreError> {
        let sealed = crypto::seal_value(&self.master, name, value.expose_secret().as_bytes());
        let now = Utc::now();
        let row = SecretRow {
            name: name.to_owned(),
            description: description.filter(|d| !d.is_empty()),
            ciphertext: sealed.ciphertext,
            wrapped_key: sealed.wrapped_key,
            created_at: now,
            updated_at: now,
        };
        self.store.insert_secret(&row).await
    }

    /// Replaces the value (under a new data key) and/or the description of `name`; `false` if
    /// there is no such secret. The next attempt that uses it gets the new value.
    pub async fn update(
        &self,
        name: &str,
        value: Option<&SecretString>,
        description: Option<String>,
    ) -> Result<bool, StoreError> {
        let sealed = value.map(|v| {
            let sealed = crypto::seal_value(&self.master, name, v.expose_secret().as_bytes());
            (sealed.ciphertext, sealed.wrapped_key)
        });
        self.store.update_secret(name, &SecretChange { sealed, description, now: Utc::now() }).await
    }

    /// Decrypts the secrets `names` for one attempt.
    pub async fn open_for_attempt(&self, names: &[String]) -> Result<Opened, Unavailable> {
        let mut opened = Opened::default();
        for name in names {
            let row = self.store.sealed_secret(name).await?.ok_or_else(|| Unavailable::Missing(name.clone()))?;
            let sealed = Sealed { ciphertext: row.ciphertext, wrapped_key: row.wrapped_key };
            let plain =
                crypto::open_value(&self.master, name, &sealed).map_err(|_| Unavailable::Unopened(name.clone()))?;
            let text = String::from_utf8(plain.to_vec()).map_err(|_| Unavailable::Unopened(name.clone()))?;
            opened.values.push((name.clone(), SecretString::from(text)));
        }
        Ok(opened)
    }
}

/// `trellis secrets rotate-master-key`: re-wraps every data key under a new master key (from
/// `TRELLIS_NEW_MASTER_KEY`, else generated into a new key file) and replaces the key check
/// value, in one transaction. Run it with the servers stopped: a running server keeps the old
/// key and must be restarted with the new one.
pub async fn rotate_master_key(store: DynStore, db: &DatabaseConfig, new_key: Option<&str>) -> anyhow::Result<String> {
    if new_key.is_none() && db.master_key.is_some() {
        bail!("the current master key comes from TRELLIS_MASTER_KEY: give the new one in TRELLIS_NEW_MASTER_KEY");
    }
    let vault = Vault::open(store.clone(), db).await?;
    let (new, written) = match new_key {
        Some(text) => (master_key::parse(text, "TRELLIS_NEW_MASTER_KEY")?, None),
        None => {
            let path = master_key::key_file(db)?;
            let staged = path.with_extension("key.new");
            let key = Key::random();
            master_key::write_new_file(&staged, &key)
                .context("a new key file is written beside the old one first (remove a stale master.key.new)")?;
            (key, Some((staged, path)))
        }
    };
    let mut rewrapped = Vec::new();
    for (name, wrapped) in store.wrapped_keys().await? {
        let moved = crypto::rewrap(&vault.master, &new, &name, &wrapped).map_err(|_| {
            anyhow::anyhow!("the data key of secret `{name}` does not open with the current master key")
        })?;
        rewrapped.push((name, moved));
    }
    let expected = store.setting_or_init(MASTER_KEY_CHECK, "").await?;
    let check = STANDARD.encode(crypto::check_value(&new));
    if !store.rewrap_secrets(&rewrapped, &expected, &check).await? {
        bail!(
            "secrets changed while rotating (another rotation, or a secret added); nothing was changed: run it again"
        );
    }
    let count = rewrapped.len();
    match written {
        Some((staged, path)) => {
            let old = path.with_extension("key.old");
            if path.exists() {
                std::fs::rename(&path, &old).with_context(|| format!("keeping the old key as {}", old.display()))?;
            }
            std::fs::rename(&staged, &path).with_context(|| {
                format!("the database now needs the key in {}; move it to {}", staged.display(), path.display())
            })?;
            Ok(format!(
                "re-wrapped {count} secret(s) under a new master key in {}; the old key is in {} (delete it once you \
                 no longer need backups made before now)",
                path.display(),
                old.display()
            ))
        }
        None => Ok(format!(
            "re-wrapped {count} secret(s) under the new master key; start Trellis with TRELLIS_MASTER_KEY set to it"
        )),
    }
}
