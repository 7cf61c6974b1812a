// A reader of the parts of PTX the stand-in driver checks launches by
// (ptx.h): statements are read as tokens, the bodies of functions skipped
// but for their .shared declarations.

#include "ptx.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace {

struct Lexer {
  const char* p;
  int line = 1;

  // next returns the next token: a word of letters, digits and . _ $ %,
  // a quoted string, or one character of punctuation; "" at the end.
  std::string next() {
    for (;;) {
      while (*p && isspace((unsigned char)*p)) {
        if (*p == '\n') line++;
        p++;
      }
      if (p[0] == '/' && p[1] == '/') {
        while (*p && *p != '\n') p++;
        continue;
      }
      if (p[0] == '/' && p[1] == '*') {
        const char* e = strstr(p + 2, "*/");
        for (const char* q = p; q < (e ? e : p + strlen(p)); q++) line += *q == '\n';
        p = e ? e + 2 : p + strlen(p);
        continue;
      }
      break;
    }
    if (*p == 0) return "";
    const char* s = p;
    if (*p == '"') {
      p++;
      while (*p && *p != '"') p++;
      if (*p) p++;
      return std::string(s, p);
    }
    auto word = [](char c) { return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '$' || c == '%'; };
    if (word(*p)) {
      while (*p && word(*p)) p++;
      return std::string(s, p);
    }
    p++;
    return std::string(s, 1);
  }
};

// typeSize is the size of a PTX fundamental type (".u32"), 0 if t is none.
int typeSize(const std::string& t) {
  static const struct {
    const char* name;
    int size;
  } types[] = {{".b8", 1},  {".u8", 1},  {".s8", 1},  {".b16", 2}, {".u16", 2}, {".s16", 2}, {".f16", 2},
               {".bf16", 2}, {".b32", 4}, {".u32", 4}, {".s32", 4}, {".f32", 4}, {".b64", 8}, {".u64", 8},
               {".s64", 8}, {".f64", 8}, {".pred", 1}};
  for (auto& x : types)
    if (t == x.name) return x.size;
  return 0;
}

// declSize reads "[.align A] .type name[N]" up to a ";" (consumed) or a
// "," or ")" (left for the caller) and returns the bytes declared (0 when it
// is not a declaration), with the alignment and the name.
int declSize(Lexer& lx, int* align, std::string* name) {
  int elem = 0, count = 1;
  *align = 1;
  for (;;) {
    const char* save = lx.p;
    int line = lx.line;
    std::string t = lx.next();
    if (t.empty() || t == ";") break;
    if (t == "," || t == ")") {
      lx.line = line;
      lx.p = save;
      break;
    }
    if (t == ".align") {
      *align = atoi(lx.next().c_str());
    } else if (int s = typeSize(t)) {
      elem = s;
    } else if (t == "[") {
      std::string n = lx.next();
      count = n == "]" ? 0 : atoi(n.c_str());
      if (n != "]") lx.next();  // "]"
    } else if (t[0] != '.') {
      *name = t;
    }
  }
  return elem * count;
}

// skipBody skips a function body after its "{", counting .shared
// declarations into *shared.
bool skipBody(Lexer& lx, unsigned* shared) {
  int depth = 1;
  bool start = true;  // at the start of a statement
  while (depth > 0) {
    std::string t = lx.next();
    if (t.empty()) return false;
    if (t == "{") {
      depth++;
      start = true;
    } else if (t == "}") {
      depth--;
      start = true;
    } else if (t == ";") {
      start = true;
    } else if (start && t == ".shared") {
      int align;
      std::string name;
      int bytes = declSize(lx, &align, &name);
      if (align > 1) *shared = (*shared + align - 1) / align * align;
      *shared += bytes;
      start = true;
    } else {
      start = false;
    }
  }
  return true;
}

bool parseEntry(Lexer& lx, PtxKernel* k, std::string* err) {
  k->name = lx.next();
  if (lx.next() != "(") {
    *err = "entry " + k->name + ": no parameter list";
    return false;
  }
  std::string t = lx.next();
  while (t != ")") {
    if (t != ".param") {
      *err = "entry " + k->name + ": parameter declaration expected, found '" + t + "'";
      return false;
    }
    int align;
    std::string name;
    int size = declSize(lx, &align, &name);
    if (size <= 0) {
      *err = "entry " + k->name + ": parameter " + name + " has no size";
      return false;
    }
    k->params.push_back(size);
    t = lx.next();
    if (t == ",") t = lx.next();
    if (t.empty()) {
      *err = "entry " + k->name + ": unterminated parameter list";
      return false;
    }
  }
  for (t = lx.next(); t != "{"; t = lx.next()) {
    if (t.empty() || t == ";") {
      *err = "entry " + k->name + ": no body";
      return false;
    }
    if (t == ".maxntid" || t == ".reqntid") {
      unsigned n = 1;
      for (;;) {
        n *= (unsigned)atoi(lx.next().c_str());
        const char* save = lx.p;
        if (lx.next() != ",") {
          lx.p = save;
          break;
        }
      }
      k->maxThreads = n;
    }
  }
  if (!skipBody(lx, &k->staticShared)) {
    *err = "entry " + k->name + ": unterminated body";
    return false;
  }
  return true;
}

}  // namespace

bool parsePtx(const char* src, PtxModule* out, std::string* err) {
  Lexer lx{src};
  bool version = false, target = false;
  for (;;) {
    std::string t = lx.next();
    if (t.empty()) break;
    if (t == ".version") {
      std::string v = lx.next();
      if (sscanf(v.c_str(), "%d.%d", &out->versionMajor, &out->versionMinor) != 2) {
        *err = "line " + std::to_string(lx.line) + ": bad .version " + v;
        return false;
      }
      version = true;
      continue;
    }
    if (!version) {
      *err = "line " + std::to_string(lx.line) + ": the module does not start with a .version directive";
      return false;
    }
    if (t == ".target") {
      std::string s = lx.next();
      if (strncmp(s.c_str(), "sm_", 3) != 0) {
        *err = "line " + std::to_string(lx.line) + ": bad .target " + s;
        return false;
      }
      out->targetSM = atoi(s.c_str() + 3);
      target = true;
      while (true) {  // ", texmode_independent" and the like
        const char* save = lx.p;
        if (lx.next() != ",") {
          lx.p = save;
          break;
        }
        lx.next();
      }
      continue;
    }
    if (t == ".entry") {
      PtxKernel k;
      if (!parseEntry(lx, &k, err)) return false;
      out->kernels.push_back(k);
      continue;
    }
    if (t == ".func") {
      // A device function: its declaration or its body.
      for (std::string u = lx.next();; u = lx.next()) {
        if (u.empty()) {
          *err = "unterminated .func";
          return false;
        }
        if (u == ";") break;
        if (u == "{") {
          unsigned ignored = 0;
          if (!skipBody(lx, &ignored)) {
            *err = "unterminated .func body";
            return false;
          }
          break;
        }
      }
      continue;
    }
    if (t == ".visible" || t == ".weak" || t == ".extern" || t == ".address_size") {
      if (t == ".address_size") lx.next();
      continue;
    }
    // A declaration at module scope (.global, .const, .shared): up to its
    // ";", an initializer's braces included.
    int depth = 0;
    for (std::string u = t;; u = lx.next()) {
      if (u.empty()) {
        *err = "line " + std::to_string(lx.line) + ": unterminated statement";
        return false;
      }
      if (u == "{") depth++;
      if (u == "}") depth--;
      if (u == ";" && depth == 0) break;
    }
  }
  if (!version || !target) {
    *err = version ? "no .target directive" : "the module does not start with a .version directive";
    return false;
  }
  return true;
}
