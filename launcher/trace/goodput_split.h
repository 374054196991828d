// The goodput account's arithmetic on one split (launcher/trace/goodput.h): a figure made, one
// added into another (the weaker basis wins), a round's split added into the job's, the figures in
// the order they are shown and their sum; and the account's one conversion between seconds and
// microseconds, which its journal times are kept in.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dlaunch/goodput.pb.h"

namespace dlaunch {

double GoodputSeconds(int64_t us);
int64_t GoodputMicros(double seconds);

v1::GoodputFigure GoodputFigureOf(double seconds, v1::GoodputBasis basis, std::string note = "");
// Adds `from` into `to`: the seconds, the weaker basis (not known, then bound, then measured) and
// the first note.
void AddGoodputFigure(const v1::GoodputFigure& from, v1::GoodputFigure* to);
// Every figure of `from` into the same one of `to`.
void AddGoodputSplit(const v1::GoodputSplit& from, v1::GoodputSplit* to);
// Every figure of `split`, to set them all.
std::vector<v1::GoodputFigure*> MutableGoodputFigures(v1::GoodputSplit* split);

// The figures of a split in the order they are shown, with their names ("start-up",
// "productive", ...).
std::vector<std::pair<std::string, const v1::GoodputFigure*>> GoodputFigures(
    const v1::GoodputSplit& split);
// Their sum: the wall time the split covers.
double GoodputSum(const v1::GoodputSplit& split);

}  // namespace dlaunch
