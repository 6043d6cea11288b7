//! Where a scenario path (`links[1].fwd.loss.p`) sits in the TOML file it came from, so that a
//! scenario error reads `FILE:LINE: path: message`. Python's `tomllib` keeps no positions;
//! `toml_edit`'s immutable document keeps every key's and value's byte span.

use toml_edit::{ImDocument, Item, Table, Value};

/// One step of a path: a key or an index.
enum Step<'p> {
    Key(&'p str),
    Index(usize),
}

fn steps(path: &str) -> Option<Vec<Step<'_>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            out.push(Step::Key(key));
        }
        while let Some(stripped) = rest.strip_prefix('[') {
            let end = stripped.find(']')?;
            out.push(Step::Index(stripped[..end].parse().ok()?));
            rest = &stripped[end + 1..];
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(out)
}

/// A place in the document: a table (a `[header]` or the root) or a value.
#[derive(Clone, Copy)]
enum Node<'d> {
    Table(&'d Table),
    Value(&'d Value),
}

fn item_node(item: &Item) -> Option<Node<'_>> {
    match item {
        Item::Table(t) => Some(Node::Table(t)),
        Item::Value(v) => Some(Node::Value(v)),
        Item::ArrayOfTables(_) | Item::None => None,
    }
}

/// The byte offset of the deepest step of `path` the document holds: the key of a field, the
/// header of an array-of-tables element, a value inside an inline table or array.
fn offset(doc: &ImDocument<&str>, path: &[Step<'_>]) -> Option<usize> {
    let mut node = Node::Table(doc.as_table());
    let mut best = None;
    let mut i = 0;
    while i < path.len() {
        let next = match (node, &path[i]) {
            (Node::Table(t), Step::Key(k)) => {
                let Some((key, item)) = t.get_key_value(k) else {
                    break;
                };
                best = key.span().map(|s| s.start).or(best);
                if let (Item::ArrayOfTables(array), Some(Step::Index(j))) = (item, path.get(i + 1))
                {
                    let Some(table) = array.get(*j) else { break };
                    best = table.span().map(|s| s.start).or(best);
                    i += 1;
                    Node::Table(table)
                } else {
                    match item_node(item) {
                        Some(n) => n,
                        None => break,
                    }
                }
            }
            (Node::Value(Value::InlineTable(t)), Step::Key(k)) => {
                let (Some(key), Some(value)) = (t.key(k), t.get(k)) else {
                    break;
                };
                best = key.span().map(|s| s.start).or(best);
                Node::Value(value)
            }
            (Node::Value(Value::Array(a)), Step::Index(j)) => {
                let Some(value) = a.get(*j) else { break };
                best = value.span().map(|s| s.start).or(best);
                Node::Value(value)
            }
            _ => break,
        };
        node = next;
        i += 1;
    }
    best
}

/// The 1-based line of `path` in `text`, or of its deepest part the file gives; `None` when the
/// text is not TOML or holds no part of the path (a value set on the command line).
pub fn line_of(text: &str, path: &str) -> Option<usize> {
    let doc = ImDocument::parse(text).ok()?;
    let at = offset(&doc, &steps(path)?)?;
    Some(text[..at].matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::line_of;

    const DOC: &str = "duration = \"1s\"\nnodes = [\"A\", \"B\"]\n\n[[links]]\na = \"A\"\n\
                       b = \"B\"\n\n[[links]]\na = \"B\"\nfwd = { loss = { model = \"x\", p = 1 } }\n\
                       [links.rev]\nqueue_pkts = -5\n";

    #[test]
    fn finds_keys_tables_and_inline_values() {
        assert_eq!(line_of(DOC, "duration"), Some(1));
        assert_eq!(line_of(DOC, "nodes[1]"), Some(2));
        assert_eq!(line_of(DOC, "links[0].b"), Some(6));
        assert_eq!(line_of(DOC, "links[1].fwd.loss.p"), Some(10));
        assert_eq!(line_of(DOC, "links[1].rev.queue_pkts"), Some(12));
        // A field the file lacks: the deepest part it has.
        assert_eq!(line_of(DOC, "links[1].rate"), Some(8));
        assert_eq!(line_of(DOC, "flows[0].tcp"), None);
        assert_eq!(line_of("not toml = = 1", "a"), None);
    }
}
