//! The root component: the router and the pages it shows.

use crate::components::designer::designer_page::DesignerPage;
use crate::components::{
    instance_page::InstancePage, login_page::LoginPage, not_found::NotFound, workflows_page::WorkflowsPage,
};
use leptos::prelude::*;
use leptos_router::components::{Route, Router, Routes};
use leptos_router::path;

#[component]
pub fn App() -> impl IntoView {
    view! {
        <Router>
            <Routes fallback=NotFound>
                <Route path=path!("/login") view=LoginPage />
                <Route path=path!("/") view=WorkflowsPage />
                <Route path=path!("/workflows/:id") view=DesignerPage />
                <Route path=path!("/instances/:id") view=InstancePage />
            </Routes>
        </Router>
    }
}
