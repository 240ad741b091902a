//===- CompilerAPI.cpp - whole compiles, for the C++ and C APIs -----------===//
#include "kiln/compiler.hpp"

#include "kiln/Config.h"
#include "lib/Codegen/OutputFile.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace mlir;
using kiln::CompileOptions;
using kiln::DiagnosticHandler;
using kiln::EmitKind;
using kiln::ImportOptions;

/// `text` with each control character written as an escape (\n, \r, \t,
/// \xNN): names and messages come from the model, and one must not
/// rewrite a terminal or forge lines of the report.
static std::string escapeControlCharacters(StringRef text) {
  std::string escaped;
  llvm::raw_string_ostream os(escaped);
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f)
      os << c;
    else if (c == '\n')
      os << "\\n";
    else if (c == '\r')
      os << "\\r";
    else if (c == '\t')
      os << "\\t";
    else
      os << "\\x" << llvm::format_hex_no_prefix(byte, 2);
  }
  return escaped;
}

kiln::Diagnostic kiln::convertDiagnostic(const mlir::Diagnostic &diagnostic,
                                   StringRef defaultFile) {
  kiln::Diagnostic result;
  switch (diagnostic.getSeverity()) {
  case DiagnosticSeverity::Error:
    result.severity = kiln::Diagnostic::Severity::Error;
    break;
  case DiagnosticSeverity::Warning:
    result.severity = kiln::Diagnostic::Severity::Warning;
    break;
  case DiagnosticSeverity::Note:
    result.severity = kiln::Diagnostic::Severity::Note;
    break;
  case DiagnosticSeverity::Remark:
    result.severity = kiln::Diagnostic::Severity::Remark;
    break;
  }
  result.file = escapeControlCharacters(defaultFile);
  // The importer locates a node as its name inside the file's location.
  Location loc = diagnostic.getLocation();
  if (auto name = dyn_cast<NameLoc>(loc)) {
    result.node = escapeControlCharacters(name.getName());
    loc = name.getChildLoc();
  }
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc)) {
    result.file = escapeControlCharacters(fileLoc.getFilename());
    result.line = fileLoc.getLine();
    result.column = fileLoc.getColumn();
  }
  // Messages are kept to one line, as users grep for them.
  std::string message = diagnostic.str();
  std::replace(message.begin(), message.end(), '\n', ' ');
  result.message = escapeControlCharacters(message);
  return result;
}

namespace {

/// Reports every diagnostic of `context` to `handler` while in scope, and
/// keeps the first error's text for the llvm::Error a compile returns.
class DiagnosticCollector {
public:
  DiagnosticCollector(MLIRContext &context, StringRef file,
                      const DiagnosticHandler &handler)
      : scoped(&context, [this, file = file.str(),
                          &handler](mlir::Diagnostic &diagnostic) {
          report(diagnostic, file, handler);
          for (mlir::Diagnostic &note : diagnostic.getNotes())
            report(note, file, handler);
          return success();
        }) {}

  llvm::Error takeError() {
    return llvm::createStringError(
        firstError.empty() ? "compilation failed" : firstError);
  }

private:
  void report(mlir::Diagnostic &diagnostic, const std::string &file,
              const DiagnosticHandler &handler) {
    kiln::Diagnostic converted = kiln::convertDiagnostic(diagnostic, file);
    if (converted.severity == kiln::Diagnostic::Severity::Error &&
        firstError.empty()) {
      firstError = converted.file;
      if (!converted.node.empty())
        firstError += ": node '" + converted.node + "'";
      firstError += ": " + converted.message;
    }
    if (handler)
      handler(converted);
  }

  ScopedDiagnosticHandler scoped;
  std::string firstError;
};

/// A context of its own for one compile, with Kiln's dialects, its
/// diagnostics collected under `file`'s name.
struct CompileContext {
  CompileContext(StringRef file, const DiagnosticHandler &handler)
      : context(createRegistry()), diagnostics(context, file, handler) {}

  static DialectRegistry createRegistry() {
    DialectRegistry registry;
    kiln::registerCompilerDialects(registry);
    return registry;
  }

  MLIRContext context;
  DiagnosticCollector diagnostics;
};

} // namespace

llvm::Error kiln::compileOnnxFile(StringRef modelPath,
                                  const ImportOptions &importOptions,
                                  const CompileOptions &options,
                                  const DiagnosticHandler &handler) {
  CompileContext compile(modelPath, handler);
  OwningOpRef<ModuleOp> module =
      importOnnxFile(modelPath, compile.context, importOptions);
  if (!module || failed(compileModule(*module, options)))
    return compile.diagnostics.takeError();
  return llvm::Error::success();
}

llvm::Error kiln::compileSplatScene(StringRef scenePath,
                                    const SplatSceneOptions &sceneOptions,
                                    const CompileOptions &options,
                                    const DiagnosticHandler &handler) {
  CompileContext compile(scenePath, handler);
  OwningOpRef<ModuleOp> module =
      importSplatScene(scenePath, compile.context, sceneOptions);
  if (!module || failed(compileModule(*module, options)))
    return compile.diagnostics.takeError();
  return llvm::Error::success();
}

llvm::Expected<std::vector<char>>
kiln::compileOnnxBytes(StringRef model, StringRef name,
                       StringRef externalDataDir,
                       const ImportOptions &importOptions,
                       const CompileOptions &options,
                       const DiagnosticHandler &handler) {
  CompileContext compile(name, handler);
  OwningOpRef<ModuleOp> module = importOnnxBytes(
      model, name, externalDataDir, compile.context, importOptions);
  if (!module)
    return compile.diagnostics.takeError();

  // lld writes a file: the artifact is made in a temporary one, read back
  // and removed.
  SmallString<256> path;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("kiln-artifact", "so", path))
    return llvm::createStringError(
        "cannot create a temporary file for the artifact: " + ec.message());
  TemporaryFileRemover remover(path);
  CompileOptions libraryOptions = options;
  libraryOptions.emit = EmitKind::Library;
  libraryOptions.outputPath = path.str().str();
  if (libraryOptions.libraryName.empty()) {
    SmallString<128> soname(llvm::sys::path::filename(name));
    llvm::sys::path::replace_extension(soname, "so");
    libraryOptions.libraryName = soname.str().str();
  }
  if (failed(compileModule(*module, libraryOptions)))
    return compile.diagnostics.takeError();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> artifact =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!artifact)
    return llvm::createStringError("cannot read the artifact back: " +
                                   artifact.getError().message());
  StringRef bytes = (*artifact)->getBuffer();
  return std::vector<char>(bytes.begin(), bytes.end());
}

const char *kiln::getVersion() { return KILN_VERSION; }
