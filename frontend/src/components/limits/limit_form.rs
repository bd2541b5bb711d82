//! Making or changing a shared limit: its name (fixed once made), how many attempts may run
//! at once, and how many may begin per period. The form reads its numbers as typed and the
//! model's rules (`shared_limit::spec_problems`) say what is wrong before anything is sent.

use crate::api_limits;
use crate::components::mutation::Mutation;
use leptos::prelude::*;
use trellis_model::api::{LimitRate, SharedLimit, SharedLimitSpec};
use trellis_model::shared_limit::spec_problems;

/// The form's fields as typed.
#[derive(Clone, Default)]
struct Typed {
    name: String,
    concurrency: String,
    rate: String,
    period_ms: String,
}

impl Typed {
    fn of(limit: &SharedLimit) -> Typed {
        Typed {
            name: limit.name.clone(),
            concurrency: limit.concurrency.map(|n| n.to_string()).unwrap_or_default(),
            rate: limit.rate.map(|r| r.limit.to_string()).unwrap_or_default(),
            period_ms: limit.rate.map(|r| r.period_ms.to_string()).unwrap_or_else(|| "1000".into()),
        }
    }

    /// The request, or what to fix.
    fn spec(&self) -> Result<SharedLimitSpec, String> {
        let number = |text: &str, what: &str| -> Result<Option<u64>, String> {
            let text = text.trim();
            if text.is_empty() {
                return Ok(None);
            }
            text.parse().map(Some).map_err(|_| format!("{what} must be a whole number, not `{text}`"))
        };
        let concurrency = number(&self.concurrency, "At once")?.map(|n| n.min(u64::from(u32::MAX)) as u32);
        let rate = match number(&self.rate, "Per period")? {
            None => None,
            Some(limit) => {
                let period_ms = number(&self.period_ms, "Period")?.unwrap_or(1000);
                Some(LimitRate { limit: limit.min(u64::from(u32::MAX)) as u32, period_ms })
            }
        };
        let spec = SharedLimitSpec { name: self.name.trim().to_owned(), concurrency, rate };
        match spec_problems(&spec).into_iter().next() {
            Some(problem) => Err(problem.message),
            None => Ok(spec),
        }
    }
}

/// `editing`: the limit being changed (its name stays); `None` makes a new one.
#[component]
pub fn LimitForm(
    editing: Option<SharedLimit>,
    on_done: Callback<Result<String, String>>,
    #[prop(optional)] on_cancel: Option<Callback<()>>,
) -> impl IntoView {
    let is_new = editing.is_none();
    let typed = RwSignal::new(
        editing.as_ref().map(Typed::of).unwrap_or_else(|| Typed { period_ms: "1000".into(), ..Typed::default() }),
    );
    let problem = RwSignal::new(None::<String>);
    let saving = Mutation::new();
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let spec = match typed.get_untracked().spec() {
            Ok(spec) => spec,
            Err(why) => return problem.set(Some(why)),
        };
        problem.set(None);
        let name = spec.name.clone();
        let call = async move {
            match is_new {
                true => api_limits::create_limit(&spec).await,
                false => api_limits::update_limit(&spec).await,
            }
        };
        saving.settle(call, move |said| {
            if said.is_ok() && is_new {
                typed.set(Typed { period_ms: "1000".into(), ..Typed::default() });
            }
            let done = if is_new {
                format!("Made {name}.")
            } else {
                format!("Saved {name}: attempts asking from now on meet it.")
            };
            on_done.run(said.map(|_| done).map_err(|e| e.message()));
        });
    };
    let field =
        move |label: &'static str, testid: &'static str, get: fn(&Typed) -> String, set: fn(&mut Typed, String)| {
            view! {
                <label>{label} " "
                    <input inputmode="numeric" data-testid=testid size="8"
                        prop:value=move || typed.with(get)
                        on:input=move |ev| typed.update(|t| set(t, event_target_value(&ev))) />
                </label>
            }
        };
    let aria = if is_new { "Make a shared limit" } else { "Change a shared limit" };
    view! {
        <form class="inline-form limit-form" aria-label=aria on:submit=save>
            {is_new.then(|| view! {
                <label>"Name " <input required spellcheck="false" autocomplete="off" data-testid="limit-name"
                    pattern="[A-Za-z0-9_.\\-]{1,64}" title="1-64 letters, digits, _, - or ., e.g. stripe-api"
                    prop:value=move || typed.with(|t| t.name.clone())
                    on:input=move |ev| typed.update(|t| t.name = event_target_value(&ev)) /></label>
            })}
            {field("At once", "limit-concurrency", |t| t.concurrency.clone(), |t, v| t.concurrency = v)}
            {field("Per period", "limit-rate", |t| t.rate.clone(), |t, v| t.rate = v)}
            {field("Period (ms)", "limit-period", |t| t.period_ms.clone(), |t, v| t.period_ms = v)}
            <button type="submit" class="primary">{if is_new { "Make limit" } else { "Save" }}</button>
            {on_cancel.map(|cancel| view! { <button type="button" on:click=move |_| cancel.run(())>"Cancel"</button> })}
            {move || problem.get().map(|p| view! { <p class="field-error" role="alert" data-testid="limit-problem">{p}</p> })}
        </form>
    }
}
