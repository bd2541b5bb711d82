//! The root component: the router, the sign-in page, and the pages inside the layout. Each
//! route is a row of `pages.rs` (its title, header section and role come from there).

use crate::components::admin::{
    audit_page::AuditPage, cluster_page::ClusterPage, retention_page::RetentionPage, users_page::UsersPage,
};
use crate::components::alerts::alerts_page::AlertsPage;
use crate::components::approvals::{approval_page::ApprovalPage, inbox_page::InboxPage};
use crate::components::compare::compare_page::ComparePage;
use crate::components::dashboard::{dashboard_page::DashboardPage, failures_page::FailuresPage};
use crate::components::designer::designer_page::DesignerPage;
use crate::components::limits::limits_page::LimitsPage;
use crate::components::secrets::secrets_page::SecretsPage;
use crate::components::triggers::{all_triggers_page::AllTriggersPage, triggers_page::TriggersPage};
use crate::components::{
    instance_page::InstancePage, instances::instances_page::InstancesPage, instances::jobs_page::JobsPage,
    layout::Layout, login_page::LoginPage, not_found::NotFound, workflows_page::WorkflowsPage,
};
use leptos::prelude::*;
use leptos_router::components::{ParentRoute, Route, Router, Routes};
use leptos_router::hooks::use_params_map;
use leptos_router::path;

#[component]
pub fn App() -> impl IntoView {
    view! {
        <Router>
            <Routes fallback=NotFound>
                <Route path=path!("/login") view=LoginPage />
                <ParentRoute path=path!("") view=Layout>
                    <Route path=path!("/") view=DashboardPage />
                    <Route path=path!("/failures") view=FailuresPage />
                    <Route path=path!("/users") view=UsersPage />
                    <Route path=path!("/audit") view=AuditPage />
                    <Route path=path!("/secrets") view=SecretsPage />
                    <Route path=path!("/limits") view=LimitsPage />
                    <Route path=path!("/alerts") view=AlertsPage />
                    <Route path=path!("/retention") view=RetentionPage />
                    <Route path=path!("/cluster") view=ClusterPage />
                    <Route path=path!("/workflows") view=WorkflowsPage />
                    <Route path=path!("/instances") view=InstancesPage />
                    <Route path=path!("/jobs") view=JobsPage />
                    <Route path=path!("/compare") view=ComparePage />
                    <Route path=path!("/triggers") view=AllTriggersPage />
                    <Route path=path!("/workflows/:id") view=|| per_id(|id| view! { <DesignerPage id=id /> }) />
                    <Route path=path!("/workflows/:id/triggers") view=|| per_id(|id| view! { <TriggersPage id=id /> }) />
                    <Route path=path!("/instances/:id") view=|| per_id(|id| view! { <InstancePage id=id /> }) />
                    <Route path=path!("/approvals") view=InboxPage />
                    <Route path=path!("/approvals/:id") view=|| per_id(|id| view! { <ApprovalPage id=id /> }) />
                </ParentRoute>
            </Routes>
        </Router>
    }
}

/// Builds the page for the `:id` in the address, afresh whenever it changes, so a page for one
/// workflow, instance or approval never shows another's state when the router keeps the same route.
fn per_id<V: IntoView + 'static>(page: impl Fn(String) -> V + Send + Sync + 'static) -> impl IntoView {
    let params = use_params_map();
    let id = Memo::new(move |_| params.with(|p| p.get("id")));
    move || page(id.get().unwrap_or_default())
}
