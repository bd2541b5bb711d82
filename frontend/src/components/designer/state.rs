//! The designer page's shared state, handed to its parts through context, and the actions
//! that talk to the server (load, save, publish, versions, restore). The logic these use lives
//! in `crate::designer`; this file only moves data between it, the API and signals.

use crate::api;
use crate::designer::board::Board;
use crate::designer::editor::{Clip, Edit, Editor};
use crate::designer::issues::{self, Placed};
use crate::error::ApiError;
use crate::format::DRAFT;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::VersionSummary;
use trellis_model::{validate, Definition, Issue, Limits};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Node,
    Workflow,
    Versions,
    Run,
}

/// Two versions shown side by side on the canvas.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffData {
    pub from: i64,
    pub to: i64,
    pub before: Definition,
    pub after: Definition,
}

#[derive(Clone, Copy)]
pub struct Designer {
    pub id: StoredValue<String>,
    pub board: RwSignal<Board>,
    pub loaded: RwSignal<bool>,
    pub name: RwSignal<String>,
    pub etag: RwSignal<Option<String>>,
    /// Problems the validator finds in the draft, recomputed as it changes.
    pub issues: Memo<Placed>,
    pub warnings: Memo<Vec<Issue>>,
    /// Problems the server listed when it refused the last save, with the draft it refused.
    pub server_issues: RwSignal<Option<(Definition, Vec<Issue>)>>,
    /// A passing message (saved, published, refused connection).
    pub notice: RwSignal<Option<String>>,
    pub error: RwSignal<Option<String>>,
    pub conflict: RwSignal<bool>,
    pub busy: RwSignal<bool>,
    pub clipboard: RwSignal<Option<Clip>>,
    pub versions: RwSignal<Vec<VersionSummary>>,
    pub diff: RwSignal<Option<DiffData>>,
    pub tab: RwSignal<Tab>,
    /// Sample input for expression previews.
    pub sample: RwSignal<String>,
}

impl Designer {
    pub fn new(id: String) -> Self {
        let board = RwSignal::new(Board::default());
        let server_issues = RwSignal::new(None::<(Definition, Vec<Issue>)>);
        // Pans, zooms and gestures change the board but not the draft: validate only when it changes.
        let doc = Memo::new(move |_| board.with(|b| b.editor.doc.clone()));
        let report = Memo::new(move |_| doc.with(|d| validate(d, &Limits::default())));
        // The server's verdict holds for the draft it judged; after an edit the validator speaks.
        let issues = Memo::new(move |_| {
            report.with(|r| {
                server_issues.with(|server| {
                    let judged = server.as_ref().filter(|(judged, _)| doc.with(|d| d == judged));
                    let server = judged.map(|(_, list)| list.as_slice()).unwrap_or_default();
                    Placed::from_issues(&issues::merge(&r.errors, server))
                })
            })
        });
        let warnings = Memo::new(move |_| report.with(|r| r.warnings.clone()));
        Designer {
            id: StoredValue::new(id),
            board,
            loaded: RwSignal::new(false),
            name: RwSignal::new(String::new()),
            etag: RwSignal::new(None),
            issues,
            warnings,
            server_issues,
            notice: RwSignal::new(None),
            error: RwSignal::new(None),
            conflict: RwSignal::new(false),
            busy: RwSignal::new(false),
            clipboard: RwSignal::new(None),
            versions: RwSignal::new(Vec::new()),
            diff: RwSignal::new(None),
            tab: RwSignal::new(Tab::Workflow),
            sample: RwSignal::new("{}".to_owned()),
        }
    }

    pub fn id(&self) -> String {
        self.id.get_value()
    }

    pub fn is_dirty(&self) -> bool {
        self.board.with(|b| b.editor.is_dirty())
    }

    /// Applies an edit; a refusal is shown as the notice.
    pub fn edit(&self, edit: Edit) {
        let mut refused = None;
        self.board.update(|b| refused = b.editor.apply(edit).err());
        self.notice.set(refused);
    }

    fn fail(&self, err: ApiError) {
        self.error.set(Some(err.message()));
    }

    /// Loads (or reloads, discarding local changes) the workflow and its versions.
    pub fn load(self) {
        let id = self.id();
        spawn_local(async move {
            match api::get_workflow(&id).await {
                Ok(wf) => {
                    self.name.set(wf.summary.name.clone());
                    self.etag.set(Some(wf.etag.clone()));
                    self.board.update(|b| {
                        let (view, epoch) = (b.view, b.editor.form_epoch);
                        *b = Board::new(Editor::new(wf.draft.clone()));
                        b.view = view;
                        // The forms already on screen were built from the draft this replaces:
                        // a new epoch rebuilds them from the loaded one.
                        b.editor.form_epoch = epoch + 1;
                    });
                    self.server_issues.set(None);
                    self.conflict.set(false);
                    self.error.set(None);
                    self.loaded.set(true);
                }
                Err(err) => self.fail(err),
            }
            self.load_versions().await;
        });
    }

    pub async fn load_versions(self) {
        match api::list_versions(&self.id()).await {
            Ok(list) => self.versions.set(list),
            Err(err) => self.fail(err),
        }
    }

    /// Saves the draft with the ETag it was loaded with (or over anything, when `overwrite`).
    /// Returns true when the server now holds exactly the draft on screen.
    pub async fn save(self, overwrite: bool) -> bool {
        if self.busy.get_untracked() {
            return false;
        }
        self.busy.set(true);
        let draft = self.board.with_untracked(|b| b.editor.doc.clone());
        let etag = if overwrite { None } else { self.etag.get_untracked() };
        let result = api::save_draft(&self.id(), etag.as_deref(), &draft).await;
        self.busy.set(false);
        match result {
            Ok(wf) => {
                self.etag.set(Some(wf.etag));
                // A refused gesture's message is about the draft before this save: it gives way
                // to what the save says.
                self.board.update(|b| {
                    b.editor.mark_saved(&draft);
                    b.refusal = None;
                });
                let problems = wf.problems.unwrap_or_default();
                self.notice.set(Some(issues::saved_notice(problems.len())));
                // A draft is kept with its problems; the server's (unknown secrets, callees)
                // are shown at their fields beside the ones found here.
                self.server_issues.set((!problems.is_empty()).then_some((draft, problems)));
                self.conflict.set(false);
                self.error.set(None);
                true
            }
            Err(ApiError::Problem(p)) if p.status == 412 => {
                self.conflict.set(true);
                false
            }
            Err(ApiError::Problem(p)) if p.status == 422 => {
                self.error.set(Some(format!("Not saved: {}", p.detail.clone().unwrap_or(p.title.clone()))));
                self.server_issues.set(Some((draft, p.errors)));
                false
            }
            Err(err) => {
                self.fail(err);
                false
            }
        }
    }

    /// Saves unsaved changes, then publishes the draft as the next version (the server refuses
    /// a draft with problems, listing them).
    pub fn publish(self) {
        spawn_local(async move {
            if self.is_dirty() && !self.save(false).await {
                return;
            }
            self.busy.set(true);
            let result = api::publish(&self.id(), None).await;
            self.busy.set(false);
            match result {
                Ok(p) => {
                    self.notice.set(Some(format!("Published version {}.", p.version)));
                    self.error.set(None);
                    self.load_versions().await;
                }
                Err(ApiError::Problem(p)) if p.status == 422 => {
                    self.error.set(Some(format!("Not published: {}", p.detail.clone().unwrap_or(p.title.clone()))));
                    let draft = self.board.with_untracked(|b| b.editor.doc.clone());
                    self.server_issues.set(Some((draft, p.errors)));
                }
                Err(err) => self.fail(err),
            }
        });
    }

    /// The definition of version `n`, or of the draft on screen for [`DRAFT`].
    async fn definition(self, n: i64) -> Result<Definition, ApiError> {
        if n == DRAFT {
            return Ok(self.board.with_untracked(|b| b.editor.doc.clone()));
        }
        api::get_version(&self.id(), n).await.map(|v| v.definition)
    }

    /// Shows the changes from version `from` to version `to` (either may be [`DRAFT`]) on the canvas.
    pub fn compare(self, from: i64, to: i64) {
        spawn_local(async move {
            match (self.definition(from).await, self.definition(to).await) {
                (Ok(before), Ok(after)) => self.diff.set(Some(DiffData { from, to, before, after })),
                (Err(err), _) | (_, Err(err)) => self.fail(err),
            }
        });
    }

    /// Puts version `n` into the draft as one undoable edit; saving makes it stick.
    pub fn restore(self, n: i64) {
        let id = self.id();
        spawn_local(async move {
            match api::get_version(&id, n).await {
                Ok(v) => {
                    self.diff.set(None);
                    self.edit(Edit::Replace(v.definition));
                    self.notice.set(Some(format!("Version {n} restored into the draft; save to keep it.")));
                }
                Err(err) => self.fail(err),
            }
        });
    }
}
