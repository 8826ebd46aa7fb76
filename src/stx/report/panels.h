// stx/report/panels.h — figures of side-by-side panels (gnuplot via plot.h): each panel a set of
// curves given as "x y" rows; empty curves and panels are dropped; a log y axis is used only when
// the values span more than 20× (else gnuplot shows too few tics).
#pragma once
#include <string>
#include <vector>

namespace stx {

struct Curve {
  std::string data, style, color, title;  // title "" → notitle
};
struct Panel {
  std::string title, xlabel, ylabel;
  bool logx = false, logy = false;  // logy: only when the values span more than 20× (else too few tics)
  std::vector<Curve> curves;
  std::string extra;  // more gnuplot settings
};

// Draws the non-empty panels side by side (`rows` > 1: in that many rows); nothing when all are empty.
void draw_panels(const std::string& png, std::vector<Panel> panels, const std::string& suptitle, int width, int height,
                 int rows = 1);

// A string as a gnuplot double-quoted literal.
std::string gnuplot_quoted(const std::string& s);

}  // namespace stx
