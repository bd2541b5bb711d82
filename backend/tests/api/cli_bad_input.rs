//! The client's bad input: one line saying what is wrong and what to do, the exit code that
//! tells the kind of failure apart, never a panic. And `login`/`logout` with a saved profile.

use crate::cli_client::{assert_exit, stderr, stdout, Client};
use crate::common::{both_backends, chain, TestApp, ADMIN_PASSWORD};
use std::process::Output;

both_backends!(bad_input_gives_one_line_and_the_exit_code_of_its_kind, login_keeps_a_private_profile_until_logout);

/// A wrong command line is refused before any request (the server here cannot be reached,
/// which would exit 4), exits 2, and is said in the one error format, naming the help to read.
#[tokio::test]
async fn a_wrong_command_line_exits_2_in_the_one_error_format() {
    let nowhere = Client::with_env(vec![("TRELLIS_URL", "http://127.0.0.1:1".into())]);
    let wrong: [(&[&str], &str); 7] = [
        (&["instance", "list", "--status", "bogus"], "invalid value 'bogus' for '--status"),
        (&["instance", "retry", "--status", "failed,bogus", "--yes"], "possible values: queued, running"),
        (&["instance", "list", "--bogus"], "unexpected argument '--bogus'"),
        (&["instance", "list", "--since", "yesterday"], "nor a span such as 30m, 1h"),
        (&["instance", "list", "--limit", "many"], "invalid value 'many' for '--limit"),
        (&["--output", "yaml", "instance", "list"], "invalid value 'yaml'"),
        (&["instance", "frobnicate"], "unrecognized subcommand 'frobnicate'"),
    ];
    for (args, says) in wrong {
        let out = nowhere.run(args).await;
        assert_exit(&out, 2);
        one_line(&out, says);
        assert!(stderr(&out).contains("--help`"), "{args:?}: {}", stderr(&out));
    }
    let out = nowhere.run(&["instance", "list", "--status", "bogus"]).await;
    assert!(stderr(&out).ends_with("; see `trellis instance list --help`\n"), "{}", stderr(&out));
    let help = nowhere.run(&["instance", "list", "--help"]).await;
    assert_exit(&help, 0);
    assert!(stdout(&help).contains("--since <TIME>"), "{}", stdout(&help));
}

/// One line on stderr, starting as every client error does.
fn one_line(out: &Output, says: &str) {
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("trellis: error: ") && err.contains(says), "`{says}` missing: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

async fn bad_input_gives_one_line_and_the_exit_code_of_its_kind(app: TestApp) {
    let cli = Client::new(&app).await;
    let wf = app.publish(chain()).await;

    let nowhere = Client::with_env(vec![("TRELLIS_URL", "http://127.0.0.1:1".into())]);
    let out = nowhere.run(&["instance", "list"]).await;
    assert_exit(&out, 4);
    one_line(&out, "cannot reach the server at http://127.0.0.1:1");

    let wrong = Client::with_env(vec![("TRELLIS_URL", app.url("")), ("TRELLIS_TOKEN", "not-a-key".into())]);
    let out = wrong.run(&["workflow", "list"]).await;
    assert_exit(&out, 3);
    one_line(&out, "(401)");
    assert!(stderr(&out).contains("trellis login"));

    let out = cli.run(&["instance", "start", &wf, "--input", "{not json"]).await;
    assert_exit(&out, 2);
    one_line(&out, "--input: the value is not valid JSON");

    let out = cli.run(&["instance", "start", &wf, "--input", "@/no/such/input.json"]).await;
    assert_exit(&out, 2);
    one_line(&out, "no such file");

    let out = cli.run(&["workflow", "import", "/no/such/workflow.json"]).await;
    assert_exit(&out, 2);
    one_line(&out, "cannot read `/no/such/workflow.json`");

    let out = cli.run(&["instance", "show", "00000000-0000-0000-0000-000000000000"]).await;
    assert_exit(&out, 3);
    one_line(&out, "(404): no instance with id");

    let out = cli.run(&["instance", "start", "no-such-workflow"]).await;
    assert_exit(&out, 3);
    one_line(&out, "no workflow named `no-such-workflow`");

    // Only an id reaches the request path: anything else is a usage error before any request.
    let out = cli.run(&["instance", "show", "../workflows"]).await;
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("is not an instance id"), "{}", stderr(&out));

    let out = cli.run(&["instance", "cancel", "--all", "--status", "failed", "x"]).await;
    assert_exit(&out, 2);

    let unconfigured = Client::with_env(vec![]);
    let out = unconfigured.run(&["instance", "list"]).await;
    assert_exit(&out, 2);
    one_line(&out, "no server given");
    // Invalid input is said first, before the missing server.
    let out = unconfigured.run(&["instance", "start", "deploy", "--input", "[1,"]).await;
    assert_exit(&out, 2);
    one_line(&out, "--input: the value is not valid JSON");
}

async fn login_keeps_a_private_profile_until_logout(app: TestApp) {
    let client = Client::with_env(vec![]);
    let url = app.url("");
    let out = client
        .run_with_stdin(
            &["login", "--url", &url, "--username", "admin", "--profile", "local"],
            &format!("{ADMIN_PASSWORD}\n"),
        )
        .await;
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("signed in to") && stdout(&out).contains("as admin (admin)"), "{}", stdout(&out));
    let file = client.config.path().join("credentials.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // The profile is used by name; the default profile has no server.
    assert_exit(&client.run(&["workflow", "list", "--profile", "local"]).await, 0);
    assert_exit(&client.run(&["workflow", "list"]).await, 2);

    // A refused sign-in says what to change, not to run the command being run.
    let wrong = client.run_with_stdin(&["login", "--url", &url, "--username", "admin"], "wrong-password\n").await;
    assert_exit(&wrong, 3);
    one_line(&wrong, "refused the username `admin` with that password; check both");
    assert!(!stderr(&wrong).contains("run `trellis login"), "{}", stderr(&wrong));
    let wrong = client.run_with_stdin(&["login", "--url", &url, "--with-token"], "trk_not-a-key\n").await;
    assert_exit(&wrong, 3);
    one_line(&wrong, "does not accept this API key");
    assert!(!stderr(&wrong).contains("run `trellis login"), "{}", stderr(&wrong));
    let nowhere = client.run_with_stdin(&["login", "--url", "http://127.0.0.1:1", "--username", "admin"], "pw\n").await;
    assert_exit(&nowhere, 4);
    one_line(&nowhere, "cannot reach the server at http://127.0.0.1:1");

    let out = client.run(&["logout", "--profile", "local"]).await;
    assert_exit(&out, 0);
    let out = client.run(&["workflow", "list", "--profile", "local"]).await;
    assert_exit(&out, 2);
    assert!(!std::fs::read_to_string(&file).unwrap().contains("local"));
}
