//! The failure-handler links of the run view: on a failed instance, the handler run its
//! failure started; on a handler run, the failed instance it handles.

use crate::components::run::state::RunView;
use crate::run::family::instance_link;
use leptos::prelude::*;
use std::time::Duration;
use trellis_model::InstanceStatus;

/// Re-reads of a failed instance without a handler link: the handler starts just after the
/// instance ends (from a work item), when the page has usually read it already. Bounded, as
/// most workflows have no handler.
const LOOKS: u32 = 3;

#[component]
pub fn FailureLinks() -> impl IntoView {
    let v = expect_context::<RunView>();
    let looked = StoredValue::new(0u32);
    Effect::new(move |_| {
        let waiting = v.detail.with(|d| {
            d.as_ref().is_some_and(|d| {
                matches!(d.summary.status, InstanceStatus::Failed | InstanceStatus::TimedOut)
                    && d.failure_handler.is_none()
            })
        });
        if waiting && looked.get_value() < LOOKS {
            looked.update_value(|n| *n += 1);
            set_timeout(move || v.refresh(), Duration::from_secs(1));
        }
    });
    move || {
        let d = v.detail.get()?;
        let handler = d.failure_handler.map(|h| {
            let link = instance_link(&h);
            view! {
                <p class="run-parent" data-testid="instance-failure-handler">
                    "Failure handler: " <a href=link.href data-testid="failure-handler-link">{link.text}</a>
                </p>
            }
        });
        let handles = d.handles_failure_of.map(|f| {
            let link = instance_link(&f);
            view! {
                <p class="run-parent" data-testid="instance-handles-failure">
                    "Handles the failure of " <a href=link.href data-testid="handles-failure-link">{link.text}</a>
                </p>
            }
        });
        let note = v.run.with(|r| r.note.clone()).map(|note| {
            view! { <p class="alert" role="status" data-testid="instance-note">{note}</p> }
        });
        Some(view! { {handler} {handles} {note} })
    }
}
