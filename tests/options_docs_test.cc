// The guide's tables of settings are those the one table of options makes (lib/options/
// option_table.h): a default, range or flag changed in code and not in the guide fails here.
// tools/scripts/update-options-docs.sh writes the guide's copies anew (INPROF_UPDATE_DOCS=1).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "options/option_table.h"

namespace {

using inprof::internal::fields_markdown;
using inprof::internal::option_table;
using inprof::internal::variables_markdown;

const std::string kGuide = std::string(INPROF_SOURCE_DIR) + "/docs/guide.md";

// The text between "<!-- generated: NAME -->\n" and "<!-- end generated -->", or npos ranges.
std::pair<size_t, size_t> generated_range(const std::string& text, const std::string& name) {
  const std::string begin =
      "<!-- generated: " + name + " (tools/scripts/update-options-docs.sh) -->\n";
  const size_t start = text.find(begin);
  if (start == std::string::npos) return {std::string::npos, std::string::npos};
  const size_t end = text.find("<!-- end generated -->", start);
  return {start + begin.size(), end};
}

TEST(OptionTable, TheGuidesTablesAreMadeFromIt) {
  std::ifstream in(kGuide);
  ASSERT_TRUE(in) << kGuide;
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string guide = buffer.str();
  const bool update = std::getenv("INPROF_UPDATE_DOCS") != nullptr;
  for (const auto& [name, table] :
       {std::pair<std::string, std::string>{"variables", variables_markdown()},
        {"fields", fields_markdown()}}) {
    const auto [start, end] = generated_range(guide, name);
    ASSERT_NE(start, std::string::npos) << "no generated " << name << " table in " << kGuide;
    ASSERT_NE(end, std::string::npos);
    if (update) {
      guide.replace(start, end - start, table);
      continue;
    }
    EXPECT_EQ(guide.substr(start, end - start), table)
        << "docs/guide.md's " << name
        << " table differs from lib/options/option_table.cc: run "
           "tools/scripts/update-options-docs.sh";
  }
  if (update) std::ofstream(kGuide) << guide;
}

TEST(OptionTable, EveryVariableHasAMeaningAndAnExample) {
  for (const auto& o : option_table()) {
    EXPECT_TRUE(o.meaning && *o.meaning);
    if (o.variable) {
      EXPECT_TRUE(o.example && *o.example) << o.variable;
    }
    EXPECT_TRUE(o.variable || o.field);
  }
}

}  // namespace
