//! The execution plans of published versions, cached: versions never change. Also remembers
//! which workflows have a version that limits admission, so a finished instance of one is
//! known to free a slot. Owns its cache; reads versions and workflows from the catalog.

use super::plan::Plan;
use crate::store::phases::PHASES;
use crate::store::{CatalogStore, InstanceStore, WorkItem};
use anyhow::Context;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};
use uuid::Uuid;

pub(super) struct Plans {
    /// The versions plans are made of, and their workflows' names.
    catalog: Arc<dyn CatalogStore>,
    /// Which version each instance runs (`instance_versions`).
    instances: Arc<dyn InstanceStore>,
    cache: RwLock<HashMap<(Uuid, i64), Arc<Plan>>>,
    /// Workflows with a version (among the cached plans) that limits admission: an instance
    /// of any of their versions finishing may free a slot.
    limited: RwLock<HashSet<Uuid>>,
}

impl Plans {
    pub(super) fn new(catalog: Arc<dyn CatalogStore>, instances: Arc<dyn InstanceStore>) -> Plans {
        Plans { catalog, instances, cache: RwLock::default(), limited: RwLock::default() }
    }

    /// The execution plan of a published version, cached: versions never change.
    pub(super) async fn get(&self, workflow: Uuid, version: i64) -> anyhow::Result<Arc<Plan>> {
        if let Some(plan) = self.cached(workflow, version) {
            return Ok(plan);
        }
        let record = self.catalog.get_version(workflow, version).await?.context("the instance's version is missing")?;
        let mut plan = Plan::new(&record.definition.0).context("a published version is not a DAG")?;
        plan.workflow = workflow;
        plan.name = self.catalog.get_workflow(workflow).await?.map(|w| w.name).unwrap_or_default();
        let plan = Arc::new(plan);
        if plan.admission().has_slots() {
            self.limited.write().expect("limited workflows").insert(workflow);
        }
        self.cache.write().expect("plan cache").insert((workflow, version), plan.clone());
        Ok(plan)
    }

    /// The plans of claimed items' instances, read for the whole claim in one statement (a
    /// plan is cached once read): `None` for an instance gone meanwhile, whose item is then
    /// handled by reading it.
    pub(super) async fn for_items(&self, items: &[WorkItem]) -> Vec<Option<Arc<Plan>>> {
        if items.is_empty() {
            return Vec::new();
        }
        let ids: Vec<Uuid> = items.iter().map(|i| i.instance_id).collect();
        let versions: HashMap<Uuid, (Uuid, i64)> = match self.instances.instance_versions(&ids).await {
            Ok(rows) => rows.into_iter().map(|(id, workflow, version)| (id, (workflow, version))).collect(),
            Err(_) => HashMap::new(),
        };
        PHASES.autocommit(1);
        let mut plans = Vec::with_capacity(items.len());
        for item in items {
            plans.push(match versions.get(&item.instance_id) {
                Some((workflow, version)) => self.get(*workflow, *version).await.ok(),
                None => None,
            });
        }
        plans
    }

    /// Whether a finished instance of `workflow` may have freed a slot: a version of it that
    /// this process has loaded limits admission (the latest one is loaded by every start;
    /// the admission sweep covers what a process has not seen).
    pub(super) fn limit_admission(&self, workflow: Uuid) -> bool {
        self.limited.read().expect("limited workflows").contains(&workflow)
    }

    fn cached(&self, workflow: Uuid, version: i64) -> Option<Arc<Plan>> {
        self.cache.read().expect("plan cache").get(&(workflow, version)).cloned()
    }
}
