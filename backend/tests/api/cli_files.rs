//! `trellis workflow pull | push | diff`: workflows kept as files, against a real server.

use crate::cli_client::{assert_exit, stderr, stdout, Client};
use crate::common::{both_backends, TestApp};
use serde_json::json;
use trellis_model::api::Workflow;

both_backends!(
    pull_edit_push_changes_the_draft_and_pulling_again_gives_the_same_bytes,
    a_push_refuses_a_stale_draft_unless_forced,
    a_pull_keeps_local_edits_unless_forced_and_a_file_without_settings_is_unchanged
);

async fn draft(app: &TestApp, id: &str) -> Workflow {
    app.get(&format!("/api/v1/workflows/{id}")).send().await.unwrap().json().await.unwrap()
}

fn waiting(duration_ms: u64) -> serde_json::Value {
    json!({"nodes": [{"id": "pause", "type": "delay", "config": {"duration_ms": duration_ms}}]})
}

async fn pull_edit_push_changes_the_draft_and_pulling_again_gives_the_same_bytes(app: TestApp) {
    let cli = Client::new(&app).await;
    let created = app.create_workflow(json!({"name": "Nightly report", "definition": waiting(10)})).await;
    let id = created.summary.id;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("workflows");
    let folder_arg = folder.to_str().unwrap();
    assert_exit(&cli.run(&["workflow", "pull", folder_arg]).await, 0);
    let file = folder.join("nightly-report.json");
    let pulled = std::fs::read_to_string(&file).unwrap();
    assert!(pulled.contains(&format!("\"id\": \"{id}\"")), "{pulled}");

    let edited = pulled.replace("\"duration_ms\": 10", "\"duration_ms\": 20");
    assert_ne!(edited, pulled);
    std::fs::write(&file, &edited).unwrap();
    let diff = cli.run(&["workflow", "diff", folder_arg]).await;
    assert_exit(&diff, 0);
    assert!(
        stdout(&diff).contains("-") && stdout(&diff).contains("+") && stdout(&diff).contains("20"),
        "{}",
        stdout(&diff)
    );
    assert_eq!(draft(&app, &id).await.draft.nodes[0].config["duration_ms"], 10, "diff changes nothing");

    let pushed = cli.run(&["workflow", "push", folder_arg]).await;
    assert_exit(&pushed, 0);
    assert!(stdout(&pushed).contains("nightly-report.json: changed"), "{}", stdout(&pushed));
    assert_eq!(draft(&app, &id).await.draft.nodes[0].config["duration_ms"], 20);

    assert_exit(&cli.run(&["workflow", "pull", folder_arg]).await, 0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited, "pull after push gives the same bytes");
    let again = cli.run(&["workflow", "push", folder_arg]).await;
    assert!(stdout(&again).contains("nightly-report.json: unchanged"), "{}", stdout(&again));

    // Single files: validate (by the server, as the file has an id), export, import.
    assert_exit(&cli.run(&["workflow", "validate", file.to_str().unwrap()]).await, 0);
    let exported = cli.run(&["workflow", "export", "Nightly report"]).await;
    assert_eq!(stdout(&exported), edited, "export writes what pull writes");
    let copy = dir.path().join("copy.json");
    std::fs::write(&copy, stdout(&exported)).unwrap();
    assert_exit(&cli.run(&["workflow", "import", copy.to_str().unwrap(), "--name", "Copy"]).await, 0);

    // A new file is created as a workflow (and learns its id); --publish publishes it.
    let new = json!({"name": "Added in git", "definition": waiting(5)});
    std::fs::write(folder.join("added.json"), serde_json::to_string(&new).unwrap()).unwrap();
    let created = cli.run(&["workflow", "push", folder_arg, "--publish"]).await;
    assert_exit(&created, 0);
    assert!(stdout(&created).contains("published Added in git as version 1"), "{}", stdout(&created));
    assert!(std::fs::read_to_string(folder.join("added.json")).unwrap().contains("\"id\": "));

    // An invalid definition is refused before anything is written.
    std::fs::write(&file, edited.replace("\"delay\"", "\"no-such-type\"")).unwrap();
    let invalid = cli.run(&["workflow", "push", folder_arg]).await;
    assert_exit(&invalid, 2);
    assert!(stderr(&invalid).contains("nightly-report.json is not a valid workflow"), "{}", stderr(&invalid));
    assert_eq!(draft(&app, &id).await.draft.nodes[0].kind, "delay");
    let invalid = cli.run(&["workflow", "validate", file.to_str().unwrap()]).await;
    assert_exit(&invalid, 1);
    assert!(stdout(&invalid).contains("invalid"), "{}", stdout(&invalid));
}

async fn a_push_refuses_a_stale_draft_unless_forced(app: TestApp) {
    let cli = Client::new(&app).await;
    let created = app.create_workflow(json!({"name": "shared", "definition": waiting(10)})).await;
    let id = created.summary.id;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().to_str().unwrap();
    assert_exit(&cli.run(&["workflow", "pull", folder]).await, 0);
    // Someone changes the draft in the designer meanwhile.
    let changed = app
        .put(&format!("/api/v1/workflows/{id}/draft"))
        .header("if-match", "*")
        .json(&waiting(30))
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 200);
    let file = dir.path().join("shared.json");
    let text = std::fs::read_to_string(&file).unwrap().replace("\"duration_ms\": 10", "\"duration_ms\": 20");
    std::fs::write(&file, text).unwrap();

    let refused = cli.run(&["workflow", "push", folder]).await;
    assert_exit(&refused, 3);
    assert!(stderr(&refused).contains("changed on the server"), "{}", stderr(&refused));
    assert_eq!(draft(&app, &id).await.draft.nodes[0].config["duration_ms"], 30);
    assert_exit(&cli.run(&["workflow", "push", folder, "--force"]).await, 0);
    assert_eq!(draft(&app, &id).await.draft.nodes[0].config["duration_ms"], 20);

    // A folder holding something else is not pulled into.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("notes.txt"), "mine").unwrap();
    let out = cli.run(&["workflow", "pull", other.path().to_str().unwrap()]).await;
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("notes.txt"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1);
}

async fn a_pull_keeps_local_edits_unless_forced_and_a_file_without_settings_is_unchanged(app: TestApp) {
    let cli = Client::new(&app).await;
    app.create_workflow(json!({"name": "kept", "definition": waiting(10)})).await;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().to_str().unwrap();
    assert_exit(&cli.run(&["workflow", "pull", folder]).await, 0);
    let file = dir.path().join("kept.json");
    let pulled = std::fs::read_to_string(&file).unwrap();
    let edited = pulled.replace("\"duration_ms\": 10", "\"duration_ms\": 20");
    std::fs::write(&file, &edited).unwrap();

    // An edit not pushed yet is neither overwritten nor lost: the pull names the file.
    let refused = cli.run(&["workflow", "pull", folder]).await;
    assert_exit(&refused, 3);
    assert!(
        stderr(&refused).contains("kept.json changed in") && stderr(&refused).contains("--force"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
    assert_exit(&cli.run(&["workflow", "pull", folder, "--force"]).await, 0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), pulled);
    // Pushed, the edit is on the server: pulling again may rewrite the file.
    std::fs::write(&file, &edited).unwrap();
    assert_exit(&cli.run(&["workflow", "push", folder]).await, 0);
    assert_exit(&cli.run(&["workflow", "pull", folder]).await, 0);

    // Written by hand without `settings`: the draft gets the defaults, the file stays as written,
    // and the two are the same workflow.
    let bare = json!({"name": "bare", "definition": waiting(5)});
    std::fs::write(dir.path().join("bare.json"), serde_json::to_string(&bare).unwrap()).unwrap();
    assert_exit(&cli.run(&["workflow", "push", folder]).await, 0);
    let diff = cli.run(&["workflow", "diff", folder]).await;
    assert_exit(&diff, 0);
    assert!(stdout(&diff).contains("bare.json: unchanged"), "{}", stdout(&diff));
    assert!(stdout(&diff).contains("0 of 2 workflows differ"), "{}", stdout(&diff));
    let again = cli.run(&["workflow", "push", folder]).await;
    assert!(stdout(&again).contains("pushed 0 workflows"), "{}", stdout(&again));
    // The pull writes the settings in; the file was as pushed, so that is no lost edit.
    assert_exit(&cli.run(&["workflow", "pull", folder]).await, 0);
    assert!(std::fs::read_to_string(dir.path().join("bare.json")).unwrap().contains("\"settings\""));
}
