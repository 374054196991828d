#include "launcher/trace/goodput_split.h"

#include <cmath>

namespace dlaunch {

double GoodputSeconds(int64_t us) { return static_cast<double>(us) / 1e6; }
int64_t GoodputMicros(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e6)); }

v1::GoodputFigure GoodputFigureOf(double seconds, v1::GoodputBasis basis, std::string note) {
  v1::GoodputFigure f;
  f.set_seconds(seconds);
  f.set_basis(basis);
  f.set_note(std::move(note));
  return f;
}

void AddGoodputFigure(const v1::GoodputFigure& from, v1::GoodputFigure* to) {
  to->set_seconds(to->seconds() + from.seconds());
  // The job's figure is as weak as its weakest round's: not known, then bound, then measured.
  if (to->basis() == v1::BASIS_UNSPECIFIED || from.basis() > to->basis()) {
    to->set_basis(from.basis());
  }
  if (to->note().empty() && !from.note().empty()) to->set_note(from.note());
}

std::vector<v1::GoodputFigure*> MutableGoodputFigures(v1::GoodputSplit* s) {
  return {s->mutable_startup(),  s->mutable_productive(), s->mutable_evaluation(),
          s->mutable_checkpoint(), s->mutable_failure(),  s->mutable_redone(),
          s->mutable_straggler(),  s->mutable_tail(),     s->mutable_not_split()};
}

void AddGoodputSplit(const v1::GoodputSplit& from, v1::GoodputSplit* to) {
  AddGoodputFigure(from.startup(), to->mutable_startup());
  AddGoodputFigure(from.productive(), to->mutable_productive());
  AddGoodputFigure(from.evaluation(), to->mutable_evaluation());
  AddGoodputFigure(from.checkpoint(), to->mutable_checkpoint());
  AddGoodputFigure(from.failure(), to->mutable_failure());
  AddGoodputFigure(from.redone(), to->mutable_redone());
  AddGoodputFigure(from.straggler(), to->mutable_straggler());
  AddGoodputFigure(from.tail(), to->mutable_tail());
  AddGoodputFigure(from.not_split(), to->mutable_not_split());
}

std::vector<std::pair<std::string, const v1::GoodputFigure*>> GoodputFigures(
    const v1::GoodputSplit& s) {
  return {{"productive", &s.productive()}, {"start-up", &s.startup()},
          {"evaluation", &s.evaluation()}, {"checkpoint", &s.checkpoint()},
          {"failures", &s.failure()},      {"redone", &s.redone()},
          {"slowest rank", &s.straggler()}, {"tail", &s.tail()},
          {"not split", &s.not_split()}};
}

double GoodputSum(const v1::GoodputSplit& split) {
  double sum = 0;
  for (const auto& [name, f] : GoodputFigures(split)) sum += f->seconds();
  return sum;
}

}  // namespace dlaunch
