// Canvas: plain rasterization into an envs::Image for the envs' renderers (Env::render):
// filled rectangles, convex polygons, circles and thick lines, in pixel coordinates with y
// growing downwards. A pixel is painted when its centre lies inside the shape; shapes are
// clipped to the frame. No anti-aliasing.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "envs/env.h"

namespace moonseed::envs {

using Rgb = std::array<uint8_t, 3>;

struct Point {
  double x = 0;
  double y = 0;
};

class Canvas {
 public:
  // Resizes `frame` to width x height and fills it with `background`.
  Canvas(Image& frame, int width, int height, Rgb background);

  void fill_rect(double x0, double y0, double x1, double y1, Rgb colour);
  // `corners` in order around a convex polygon (either direction).
  void fill_polygon(const std::vector<Point>& corners, Rgb colour);
  void fill_circle(Point centre, double radius, Rgb colour);
  // A segment `thickness` pixels wide, square ends.
  void line(Point from, Point to, double thickness, Rgb colour);

  Rgb pixel(int x, int y) const;

 private:
  void set(int x, int y, Rgb colour);

  Image& frame_;
};

}  // namespace moonseed::envs
