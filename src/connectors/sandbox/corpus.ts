/**
 * Deterministic text and people for the sandbox network and `inboxd seed`.
 *
 * Word frequencies follow Zipf's law (rank r drawn with weight 1/r^1.05) over a vocabulary of common English words
 * followed by a long tail of generated words, so that search selectivity is realistic: "the" is in a third of all
 * messages while most tail words appear a handful of times.
 */
export type Random = () => number;

/** mulberry32: tiny, fast, good enough for test data. */
export function prng(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)];

const FIRST =
  "Ada Alan Alice Amara Ana Arjun Aya Ben Bianca Carlos Chen Chloe Dana David Diego Elena Emeka Emma Erik Fatima Felix Grace Hana Hugo Ines Ivan Jack Jana Jonas Julia Kai Kenji Lara Leo Lina Lucas Maya Mei Mila Nadia Noah Nora Omar Oscar Paula Priya Rafael Rosa Sam Sara Sofia Tariq Theo Uma Victor Wei Yara Yusuf Zara Zoe".split(
    " ",
  );
const LAST =
  "Abe Alvarez Berg Brown Chen Costa Dubois Eze Fischer Garcia Haddad Ito Jansen Kim Kowalski Larsen Lee Lopez Meyer Moreau Nakamura Novak Okafor Olsen Patel Pereira Quinn Rossi Sato Schmidt Silva Singh Smith Tanaka Varga Wang Weber Yilmaz Zhang".split(
    " ",
  );
const GROUP_NOUNS =
  "Book Club|Climbing Crew|Family|Flatmates|Garden Project|Hackathon|Hiking|Launch Team|Movie Night|Band|Reading Group|Road Trip|Running Club|Ski Trip|Study Group|Support|Trip Planning|Volunteers|Wedding|Weekend".split(
    "|",
  );

const COMMON = (
  "the i to you a and it is that of in for me on have be this we do at my so just not but with are can what was " +
  "will if about no yes get all know like up out there your go one they think ok good time now how would see he she " +
  "what's here then well going when back really too tomorrow today want need thanks right did more some make call let " +
  "our from got day by an them great sure sounds maybe work home night later week still morning any could sorry also " +
  "lunch dinner meeting plan coffee people doing new thing tonight free weekend next last over after before first " +
  "love nice pretty find come take look said because very much which where who why been has had were their us him her " +
  "yeah haha cool awesome fine done send check photo file link train bus car flight ticket hotel price money pay " +
  "buy shop store movie book music song game team project deadline review draft doc slides release bug fix test " +
  "deploy server issue update email phone address birthday party gift cake wine beer pizza dog cat kids school class " +
  "exam doctor health gym run walk bike park beach rain sun snow cold hot city trip holiday vacation"
).split(/\s+/);

const SYLLABLES =
  "ba be bi bo bu da de di do du fa fe fi fo ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo za ze zi zo".split(
    " ",
  );

export interface Corpus {
  vocabulary: string[];
  word(random: Random): string;
  sentence(random: Random): string;
}

let shared: Corpus | undefined;

/** The vocabulary: COMMON words first, then 30,000 generated tail words; identical on every run. */
export function corpus(): Corpus {
  if (shared) return shared;
  const random = prng(0xc0ffee);
  const vocabulary = [...new Set(COMMON)];
  const seen = new Set(vocabulary);
  while (vocabulary.length < 30_000) {
    const n = 2 + Math.floor(random() * 3);
    let w = "";
    for (let i = 0; i < n; i++) w += pick(random, SYLLABLES);
    if (!seen.has(w)) {
      seen.add(w);
      vocabulary.push(w);
    }
  }
  const cumulative = new Float64Array(vocabulary.length);
  let total = 0;
  for (let r = 0; r < vocabulary.length; r++) cumulative[r] = total += 1 / (r + 1) ** 1.05;
  const word = (rand: Random) => {
    const x = rand() * total;
    let lo = 0,
      hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return vocabulary[lo];
  };
  const sentence = (rand: Random) => {
    const n = 2 + Math.floor(rand() * rand() * 18);
    const words: string[] = [];
    for (let i = 0; i < n; i++) words.push(word(rand));
    const s = words.join(" ");
    return s.charAt(0).toUpperCase() + s.slice(1) + pick(rand, [".", "!", "?", "", "", "."]);
  };
  return (shared = { vocabulary, word, sentence });
}

export interface Person {
  fullName: string;
  username: string;
}

export function person(random: Random, index: number): Person {
  const first = pick(random, FIRST);
  const last = pick(random, LAST);
  return { fullName: `${first} ${last}`, username: `${first}.${last}${index}`.toLowerCase() };
}

export function groupTitle(random: Random): string {
  return `${pick(random, FIRST)}'s ${pick(random, GROUP_NOUNS)}`;
}
