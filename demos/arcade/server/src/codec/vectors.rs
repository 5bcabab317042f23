//! The shared test vectors (`demos/arcade/protocol/vectors.json`): each
//! message must encode to exactly its hex and decode back to itself. The
//! TypeScript codec runs the same file. `ARCADE_WRITE_VECTORS=1` rewrites
//! the hex from this encoder (review the diff: it changes the wire).

use super::messages::Message;

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../protocol/vectors.json");

#[derive(serde::Serialize, serde::Deserialize)]
struct Vector {
    name: String,
    message: Message,
    hex: String,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("vector hex"))
        .collect()
}

#[test]
fn every_shared_vector_encodes_to_its_bytes_and_decodes_back() {
    let text = std::fs::read_to_string(PATH).expect("vectors.json");
    let mut vectors: Vec<Vector> = serde_json::from_str(&text).expect("vectors.json parses");
    assert!(vectors.len() >= 9, "one vector per message kind at least");
    if std::env::var("ARCADE_WRITE_VECTORS").is_ok() {
        for v in &mut vectors {
            v.hex = hex(&v.message.encode());
        }
        std::fs::write(PATH, serde_json::to_string_pretty(&vectors).unwrap() + "\n").unwrap();
        return;
    }
    for v in &vectors {
        assert_eq!(hex(&v.message.encode()), v.hex, "encode {}", v.name);
        assert_eq!(
            Message::decode(&unhex(&v.hex)).as_ref(),
            Ok(&v.message),
            "decode {}",
            v.name
        );
    }
}
