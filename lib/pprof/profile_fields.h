// The field numbers of pprof's profile.proto (github.com/google/pprof/proto/profile.proto), for
// the hand-written encoder (proto_encoder.h): one list for every writer of pprof.
#ifndef INPROF_LIB_PPROF_PROFILE_FIELDS_H_
#define INPROF_LIB_PPROF_PROFILE_FIELDS_H_

#include <cstdint>

namespace inprof::internal::pprof_field {

namespace profile {
constexpr uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5,
                   kStringTable = 6, kTimeNanos = 9, kDurationNanos = 10, kPeriodType = 11,
                   kPeriod = 12, kComment = 13, kDefaultSampleType = 14;
}
namespace value_type {
constexpr uint32_t kType = 1, kUnit = 2;
}
namespace sample {
constexpr uint32_t kLocationId = 1, kValue = 2, kLabel = 3;
}
namespace label {
constexpr uint32_t kKey = 1, kStr = 2, kNum = 3, kNumUnit = 4;
}
namespace mapping {
constexpr uint32_t kId = 1, kMemoryStart = 2, kMemoryLimit = 3, kFileOffset = 4, kFilename = 5,
                   kBuildId = 6, kHasFunctions = 7, kHasFilenames = 8, kHasLineNumbers = 9,
                   kHasInlineFrames = 10;
}
namespace location {
constexpr uint32_t kId = 1, kMappingId = 2, kAddress = 3, kLine = 4;
}
namespace line {
constexpr uint32_t kFunctionId = 1, kLine = 2;
}
namespace function {
constexpr uint32_t kId = 1, kName = 2, kSystemName = 3, kFilename = 4, kStartLine = 5;
}

}  // namespace inprof::internal::pprof_field

#endif  // INPROF_LIB_PPROF_PROFILE_FIELDS_H_
