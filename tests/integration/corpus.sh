# The project's scenario corpus (tests/data/fixtures): every scenario in
# three variants (.hosts, .noise, .versions), mixed pairs, and base/, the
# streams written for this project. Tests that want one stream a scenario
# take the .versions variant: it keeps the event time (2026-03-02) and the
# default cluster of the original, with its own hosts (a100-NNN), job ids
# and message wordings.
#   corpus_streams DIR   the .versions stream of every scenario not in base/
#   corpus_stream DIR NAME   the .versions stream of scenario NAME
#   corpus_days DIR DAY NAME...   the .versions streams of the NAMEs one
#                      after another, the first moved to 2026-03-DAY, each
#                      next to the day after: incidents open all along
corpus_streams() {
  local f n
  for f in "$1"/*.versions.jsonl; do
    n=$(basename "$f" .versions.jsonl)
    [ -e "$1/base/$n.jsonl" ] || echo "$f"
  done
}
corpus_stream() { echo "$1/$2.versions.jsonl"; }
corpus_days() {
  local dir=$1 day=$2 s
  shift 2
  for s in "$@"; do
    sed "s/^{\"ts\":\"2026-03-02T/{\"ts\":\"2026-03-$(printf %02d "$day")T/" \
      "$(corpus_stream "$dir" "$s")"
    day=$((day + 1))
  done
}
