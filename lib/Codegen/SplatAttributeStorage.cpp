//===- SplatAttributeStorage.cpp - how a scene's attributes are stored ----===//
#include "lib/Codegen/SplatAttributeStorage.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

using namespace kiln;

llvm::StringRef kiln::getSplatStorageName(SplatStorage storage) {
  switch (storage) {
  case SplatStorage::Float32:
    return "float32";
  case SplatStorage::Float16:
    return "float16";
  case SplatStorage::Int8:
    return "int8";
  }
  llvm_unreachable("a splat attribute storage");
}

SplatInt8Map SplatInt8Map::fit(llvm::ArrayRef<float> values, int64_t columns) {
  assert(columns > 0 && values.size() % columns == 0 && "whole rows");
  std::vector<float> low(columns, std::numeric_limits<float>::infinity());
  std::vector<float> high(columns, -std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < values.size(); ++i) {
    low[i % columns] = std::min(low[i % columns], values[i]);
    high[i % columns] = std::max(high[i % columns], values[i]);
  }
  SplatInt8Map map;
  for (int64_t c = 0; c < columns; ++c) {
    if (!(low[c] <= high[c])) // no rows
      low[c] = high[c] = 0;
    float scale = static_cast<float>((double(high[c]) - low[c]) / 254);
    // A constant column reads back exactly from code 0.
    map.scales.push_back(scale > 0 ? scale : 1);
    map.offsets.push_back(static_cast<float>((double(high[c]) + low[c]) / 2));
  }
  return map;
}

int8_t SplatInt8Map::quantize(float x, int64_t column) const {
  double q = std::nearbyint((double(x) - offsets[column]) / scales[column]);
  return static_cast<int8_t>(std::clamp(q, -127.0, 127.0));
}

float SplatInt8Map::dequantize(int8_t q, int64_t column) const {
  return std::fma(static_cast<float>(q), scales[column], offsets[column]);
}

float kiln::roundAsStored(float x, SplatStorage storage,
                          const SplatInt8Map &map, int64_t column) {
  switch (storage) {
  case SplatStorage::Float32:
    return x;
  case SplatStorage::Float16:
    return static_cast<float>(static_cast<_Float16>(x));
  case SplatStorage::Int8:
    return map.dequantize(map.quantize(x, column), column);
  }
  llvm_unreachable("a splat attribute storage");
}
