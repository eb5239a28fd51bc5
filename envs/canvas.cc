#include "envs/canvas.h"

#include <algorithm>
#include <cmath>

namespace moonseed::envs {
namespace {

// The pixel range [first, last] whose centres (i + 0.5) can lie in [low, high], clipped to [0, size).
void pixel_span(double low, double high, int size, int& first, int& last) {
  first = std::max(0, static_cast<int>(std::floor(low - 0.5)));
  last = std::min(size - 1, static_cast<int>(std::ceil(high - 0.5)));
}

}  // namespace

Canvas::Canvas(Image& frame, int width, int height, Rgb background) : frame_(frame) {
  frame_.width = width;
  frame_.height = height;
  frame_.rgb.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  for (size_t i = 0; i < frame_.rgb.size(); i += 3) std::copy(background.begin(), background.end(), &frame_.rgb[i]);
}

void Canvas::set(int x, int y, Rgb colour) {
  const size_t at = (static_cast<size_t>(y) * static_cast<size_t>(frame_.width) + static_cast<size_t>(x)) * 3;
  std::copy(colour.begin(), colour.end(), &frame_.rgb[at]);
}

Rgb Canvas::pixel(int x, int y) const {
  const size_t at = (static_cast<size_t>(y) * static_cast<size_t>(frame_.width) + static_cast<size_t>(x)) * 3;
  return {frame_.rgb[at], frame_.rgb[at + 1], frame_.rgb[at + 2]};
}

void Canvas::fill_rect(double x0, double y0, double x1, double y1, Rgb colour) {
  fill_polygon({{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}, colour);
}

void Canvas::fill_polygon(const std::vector<Point>& corners, Rgb colour) {
  if (corners.size() < 3) return;
  double min_x = corners[0].x, max_x = min_x, min_y = corners[0].y, max_y = min_y;
  for (const Point& p : corners) {
    min_x = std::min(min_x, p.x);
    max_x = std::max(max_x, p.x);
    min_y = std::min(min_y, p.y);
    max_y = std::max(max_y, p.y);
  }
  int x_first = 0, x_last = 0, y_first = 0, y_last = 0;
  pixel_span(min_x, max_x, frame_.width, x_first, x_last);
  pixel_span(min_y, max_y, frame_.height, y_first, y_last);
  const size_t n = corners.size();
  for (int y = y_first; y <= y_last; ++y) {
    for (int x = x_first; x <= x_last; ++x) {
      const Point c{x + 0.5, y + 0.5};
      // Inside a convex polygon: on the same side of every edge (or on one).
      bool has_positive = false, has_negative = false;
      for (size_t i = 0; i < n; ++i) {
        const Point& a = corners[i];
        const Point& b = corners[(i + 1) % n];
        const double cross = (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
        has_positive = has_positive || cross > 0;
        has_negative = has_negative || cross < 0;
      }
      if (!(has_positive && has_negative)) set(x, y, colour);
    }
  }
}

void Canvas::fill_circle(Point centre, double radius, Rgb colour) {
  int x_first = 0, x_last = 0, y_first = 0, y_last = 0;
  pixel_span(centre.x - radius, centre.x + radius, frame_.width, x_first, x_last);
  pixel_span(centre.y - radius, centre.y + radius, frame_.height, y_first, y_last);
  for (int y = y_first; y <= y_last; ++y) {
    for (int x = x_first; x <= x_last; ++x) {
      const double dx = x + 0.5 - centre.x, dy = y + 0.5 - centre.y;
      if (dx * dx + dy * dy <= radius * radius) set(x, y, colour);
    }
  }
}

void Canvas::line(Point from, Point to, double thickness, Rgb colour) {
  const double length = std::hypot(to.x - from.x, to.y - from.y);
  if (length == 0) return;
  // The unit normal times half the thickness.
  const double nx = -(to.y - from.y) / length * thickness / 2, ny = (to.x - from.x) / length * thickness / 2;
  fill_polygon({{from.x + nx, from.y + ny}, {to.x + nx, to.y + ny}, {to.x - nx, to.y - ny}, {from.x - nx, from.y - ny}},
               colour);
}

}  // namespace moonseed::envs
