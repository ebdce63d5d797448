//! Deterministic, realistic-looking text for the benchmarks: words drawn from a fixed vocabulary with a
//! Zipf-like distribution (the word of rank r has weight 1 / r^1.07), a few fixed phrases sprinkled in.
//!
//! The vocabulary is 240 real words, most frequent first, followed by pseudo-words built from syllables, so
//! that the tail is long (20,000 words in all) as in real prose. The same seed always gives the same text.

#![allow(dead_code)]

/// The most frequent words, roughly in order of frequency in requirements conversations.
const HEAD: &str = "the to and of a in is for that it we this with be on as are should can will user
    have not or by from at an our need they system data when which app if would all also but more new
    so one team about what there their these into time use customer each report must page first only
    other support test case account payment mobile like any how some then them access login email screen
    form field value list order status update change feature design review process document requirement
    request project release version story stories acceptance criteria business product manager service
    client server database api error message notification search filter export import file upload
    download invoice price cost budget schedule meeting summary decision action item owner deadline
    risk issue priority scope goal metric dashboard chart table row column record history audit log
    security password session token role permission admin settings profile address phone number
    date week month quarter year today morning review approve reject submit cancel confirm save delete
    edit create open close start stop pause resume sync offline online network latency performance
    speed memory storage backup restore migration schema index query cache queue worker job retry
    timeout limit quota plan tier subscription trial upgrade downgrade refund discount coupon tax
    shipping delivery warehouse inventory stock supplier vendor contract legal compliance privacy";

const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "ren", "tas", "vu", "qi", "zor", "pel", "dan", "fi", "gor", "hu", "jin", "xe", "wat", "bri",
    "cla", "dro", "ept", "ney", "osk", "ult", "yam",
];

/// Phrases placed into about one message in a hundred each (searched as phrases).
pub const PHRASES: [&str; 4] = ["single sign on", "due by friday", "offline first mode", "weekly status call"];

/// Total number of words in the vocabulary.
pub const VOCABULARY: usize = 20_000;

/// Zipf exponent.
const EXPONENT: f64 = 1.07;

/// A deterministic text generator.
pub struct TextGen {
    words: Vec<String>,
    cumulative: Vec<f64>,
    rng: fastrand::Rng,
}

impl TextGen {
    pub fn new(seed: u64) -> Self {
        let mut seen = std::collections::HashSet::new();
        let mut words: Vec<String> =
            HEAD.split_whitespace().filter(|w| seen.insert(w.to_string())).map(str::to_string).collect();
        let mut i = 0usize;
        while words.len() < VOCABULARY {
            // Two to four syllables, picked by the digits of i in base 24: distinct for every i.
            let mut word = String::new();
            let mut n = i;
            let len = 2 + i % 3;
            for _ in 0..len {
                word.push_str(SYLLABLES[n % SYLLABLES.len()]);
                n /= SYLLABLES.len();
            }
            i += 1;
            if seen.insert(word.clone()) {
                words.push(word);
            }
        }
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|rank| {
                total += 1.0 / (rank as f64).powf(EXPONENT);
                total
            })
            .collect::<Vec<_>>();
        let cumulative = cumulative.iter().map(|c| c / total).collect();
        Self { words, cumulative, rng: fastrand::Rng::with_seed(seed) }
    }

    /// The word of a rank (0 is the most frequent).
    pub fn word(&self, rank: usize) -> &str {
        &self.words[rank]
    }

    fn next_word(&mut self) -> &str {
        let x = self.rng.f64();
        let rank = self.cumulative.partition_point(|c| *c < x).min(self.words.len() - 1);
        &self.words[rank]
    }

    /// A sentence-like text of `min..=max` words; one text in a hundred carries one of [`PHRASES`].
    pub fn text(&mut self, min: usize, max: usize) -> String {
        let n = self.rng.usize(min..=max);
        let mut out = String::with_capacity(n * 7);
        let phrase_at = (self.rng.u32(0..100) == 0).then(|| self.rng.usize(0..n));
        for i in 0..n {
            if i > 0 {
                out.push(if self.rng.u32(0..12) == 0 { '.' } else { ' ' });
                if out.ends_with('.') {
                    out.push(' ');
                }
            }
            if phrase_at == Some(i) {
                let phrase = PHRASES[self.rng.usize(0..PHRASES.len())];
                out.push_str(phrase);
                out.push(' ');
            }
            let word = self.next_word().to_string();
            out.push_str(&word);
        }
        out.push('.');
        out
    }

    /// Prose of about `bytes` bytes (sentences of 8 to 30 words, paragraphs of five sentences).
    pub fn prose(&mut self, bytes: usize) -> String {
        let mut out = String::with_capacity(bytes + 256);
        let mut sentences = 0;
        while out.len() < bytes {
            let mut sentence = self.text(8, 30);
            if let Some(first) = sentence.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            out.push_str(&sentence);
            sentences += 1;
            out.push_str(if sentences % 5 == 0 { "\n\n" } else { " " });
        }
        out.truncate(bytes);
        out
    }
}
