/**
 * The calculator's formulas in MathML, written element by element (no
 * library, no CDN: browsers draw MathML Core themselves). Text goes in with
 * textContent only.
 */
const NS = "http://www.w3.org/1998/Math/MathML";

type Part = Element;

function token(tag: "mi" | "mo" | "mn" | "mtext", text: string): Element {
  const el = document.createElementNS(NS, tag);
  el.textContent = text;
  return el;
}

function node(tag: string, parts: Part[]): Element {
  const el = document.createElementNS(NS, tag);
  for (const part of parts) el.appendChild(part);
  return el;
}

const mi = (t: string): Element => token("mi", t);
const mo = (t: string): Element => token("mo", t);
const mn = (t: string): Element => token("mn", t);
const text = (t: string): Element => token("mtext", t);
const row = (...parts: Part[]): Element => node("mrow", parts);
const sub = (base: Part, script: Part): Element => node("msub", [base, script]);
const sup = (base: Part, script: Part): Element => node("msup", [base, script]);
const subsup = (base: Part, a: Part, b: Part): Element => node("msubsup", [base, a, b]);
const frac = (top: Part, bottom: Part): Element => node("mfrac", [top, bottom]);
const sqrt = (x: Part): Element => node("msqrt", [x]);
const tilde = (base: Part): Element => {
  const el = node("mover", [base, mo("~")]);
  el.setAttribute("accent", "true");
  return el;
};

const ij = (): Element => row(mi("i"), mi("j"));
const vecI = (name: string): Element => sub(mi(name), mi("i"));
const vecJ = (name: string): Element => sub(mi(name), mi("j"));
const transposed = (name: string, index: string): Element => subsup(mi(name), mi(index), mi("⊤"));
const fn = (name: string, ...args: Part[]): Element => row(mi(name), mo("("), ...args, mo(")"));
const s = (): Element => sub(mi("s"), ij());
const sTilde = (i = "i", j = "j"): Element => sub(tilde(mi("s")), row(mi(i), mi(j)));
const a = (): Element => sub(mi("a"), ij());

/** A <math> element (display block) with an accessible label. */
function math(label: string, ...parts: Part[]): Element {
  const el = node("math", [row(...parts)]);
  el.setAttribute("display", "block");
  el.setAttribute("aria-label", label);
  return el;
}

/** The score function of `kind`, s_ij = … (d: the query size, for scaled dot). */
export function scoreFormula(kind: string, d: number | null): Element {
  const lhs = [s(), mo("=")];
  switch (kind) {
    case "dot":
      return math("s_ij = q_i transposed k_j", ...lhs, transposed("q", "i"), vecJ("k"));
    case "scaled_dot":
      return math(
        "s_ij = q_i transposed k_j over the square root of d",
        ...lhs,
        frac(row(transposed("q", "i"), vecJ("k")), sqrt(mi("d"))),
        mo(","),
        mi("d"),
        mo("="),
        mn(String(d ?? "?")),
      );
    case "general":
      return math("s_ij = q_i transposed W k_j", ...lhs, transposed("q", "i"), mi("W"), vecJ("k"));
    case "additive":
    case "concat":
      return math(
        "s_ij = v_a transposed tanh(W1 q_i + W2 k_j)",
        ...lhs,
        subsup(mi("v"), mi("a"), mi("⊤")),
        fn("tanh", sub(mi("W"), mn("1")), vecI("q"), mo("+"), sub(mi("W"), mn("2")), vecJ("k")),
      );
    case "cosine":
      return math(
        "s_ij = beta times q_i dot k_j over the norms of q_i and k_j",
        ...lhs,
        mi("β"),
        frac(row(transposed("q", "i"), vecJ("k")), row(mo("‖"), vecI("q"), mo("‖"), mo("‖"), vecJ("k"), mo("‖"))),
      );
    case "location":
      return math("s_ij = (W q_i)_j", ...lhs, sub(row(mo("("), mi("W"), vecI("q"), mo(")")), mi("j")));
  }
  return math(`s_ij (${kind})`, s());
}

/** s̃_ij = s_ij + M_ij, M_ij ∈ {0, −∞}. */
export function maskFormula(): Element {
  return math(
    "masked s_ij = s_ij + M_ij, M_ij is 0 where key j is visible to query i and minus infinity elsewhere",
    sTilde(),
    mo("="),
    s(),
    mo("+"),
    sub(mi("M"), ij()),
    mo(","),
    sub(mi("M"), ij()),
    mo("∈"),
    row(mo("{"), mn("0"), mo(","), mo("−"), mi("∞"), mo("}")),
  );
}

/** a_ij = exp(s̃_ij / T) / Σ_k exp(s̃_ik / T). */
export function softmaxFormula(): Element {
  const over = (i: string, j: string): Element => fn("exp", frac(sTilde(i, j), mi("T")));
  return math(
    "a_ij = exp(masked s_ij / T) over the sum over k of exp(masked s_ik / T)",
    a(),
    mo("="),
    frac(over("i", "j"), row(node("munder", [mo("∑"), mi("k")]), over("i", "k"))),
  );
}

/** g_ij = exp(−(j − p_i)² / (2σ²)), σ = D / 2. */
export function gaussianFormula(): Element {
  return math(
    "g_ij = exp(minus (j minus p_i) squared over 2 sigma squared), sigma = D over 2",
    sub(mi("g"), ij()),
    mo("="),
    fn("exp", mo("−"), frac(sup(row(mo("("), mi("j"), mo("−"), vecI("p"), mo(")")), mn("2")), row(mn("2"), sup(mi("σ"), mn("2"))))),
    mo(","),
    mi("σ"),
    mo("="),
    frac(mi("D"), mn("2")),
  );
}

/** ã_ij = a_ij g_ij (not renormalised). */
export function localFormula(): Element {
  return math("a tilde_ij = a_ij g_ij", sub(tilde(mi("a")), ij()), mo("="), a(), sub(mi("g"), ij()), text(" (not renormalised)"));
}

/** o_i = Σ_j a_ij v_j (ã for local-p). */
export function outputFormula(local: boolean): Element {
  const weight = local ? sub(tilde(mi("a")), ij()) : a();
  return math("o_i = sum over j of a_ij v_j", vecI("o"), mo("="), node("munder", [mo("∑"), mi("j")]), weight, vecJ("v"));
}
