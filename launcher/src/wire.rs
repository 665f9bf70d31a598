//! PMI-1 "simple" wire format: newline-terminated lines of space-separated
//! `key=value` words, plus the MPICH `PMI_process_mapping` encoding.

/// Splits one line (without its newline) into `(key, value)` words.  A word
/// without `=` yields an empty value; only the first `=` splits, so values may
/// contain `=`.  Never fails: judging the words is the caller's business.
pub fn parse(line: &str) -> Vec<(&str, &str)> {
    line.split_ascii_whitespace()
        .map(|w| match w.find('=') {
            Some(i) => (&w[..i], &w[i + 1..]),
            None => (w, ""),
        })
        .collect()
}

/// The value of the first word named `key`.
pub fn get<'a>(words: &[(&'a str, &'a str)], key: &str) -> Option<&'a str> {
    words.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// Virtual-node layout of a job: `size` ranks in blocks of `per_node`
/// consecutive ranks (the last block may be short).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub size: usize,
    pub per_node: usize,
}

impl Mapping {
    /// `per_node` is clamped to `1..=size` so every layout is valid.
    pub fn new(size: usize, per_node: usize) -> Mapping {
        let size = size.max(1);
        Mapping { size, per_node: per_node.clamp(1, size) }
    }
    pub fn nodes(&self) -> usize {
        self.size.div_ceil(self.per_node)
    }
    pub fn node_of(&self, rank: usize) -> usize {
        rank / self.per_node
    }
    pub fn local_rank(&self, rank: usize) -> usize {
        rank % self.per_node
    }
    /// Number of ranks on `rank`'s node.
    pub fn local_size(&self, rank: usize) -> usize {
        let node = self.node_of(rank);
        (self.size - node * self.per_node).min(self.per_node)
    }
    /// MPICH's `(vector,(first_node,node_count,ranks_per_node),...)` encoding.
    pub fn process_mapping(&self) -> String {
        let full = self.size / self.per_node;
        let rem = self.size % self.per_node;
        let mut s = String::from("(vector");
        if full > 0 {
            s.push_str(&format!(",(0,{},{})", full, self.per_node));
        }
        if rem > 0 {
            s.push_str(&format!(",({},1,{})", full, rem));
        }
        s.push(')');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_words() {
        let w = parse("cmd=put kvsname=k1 key=a=b value=x=y=z");
        assert_eq!(w, vec![("cmd", "put"), ("kvsname", "k1"), ("key", "a=b"), ("value", "x=y=z")]);
        assert_eq!(get(&w, "value"), Some("x=y=z"));
        assert_eq!(get(&w, "nope"), None);
    }

    #[test]
    fn parse_odd_input() {
        assert!(parse("").is_empty());
        assert!(parse("   \t ").is_empty());
        assert_eq!(parse("  cmd=get   junk value="), vec![("cmd", "get"), ("junk", ""), ("value", "")]);
        assert_eq!(parse("=x"), vec![("", "x")]);
    }

    #[test]
    fn mapping_even() {
        let m = Mapping::new(8, 4);
        assert_eq!(m.nodes(), 2);
        assert_eq!(m.process_mapping(), "(vector,(0,2,4))");
        assert_eq!((m.node_of(5), m.local_rank(5), m.local_size(5)), (1, 1, 4));
        let one = Mapping::new(4, 4);
        assert_eq!(one.process_mapping(), "(vector,(0,1,4))");
    }

    #[test]
    fn mapping_remainder() {
        let m = Mapping::new(7, 3);
        assert_eq!(m.nodes(), 3);
        assert_eq!(m.process_mapping(), "(vector,(0,2,3),(2,1,1))");
        assert_eq!((m.node_of(6), m.local_rank(6), m.local_size(6)), (2, 0, 1));
        assert_eq!(m.local_size(3), 3);
    }

    #[test]
    fn mapping_clamps() {
        // More ranks per node than ranks: one node holding everyone.
        let m = Mapping::new(3, 10);
        assert_eq!(m.process_mapping(), "(vector,(0,1,3))");
        let z = Mapping::new(3, 0);
        assert_eq!(z.per_node, 1);
        assert_eq!(z.process_mapping(), "(vector,(0,3,1))");
    }
}
