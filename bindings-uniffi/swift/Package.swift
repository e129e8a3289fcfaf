// swift-tools-version:5.9
// The Swift binding of contenox: UniFFI-generated sources (Sources/Contenox/Contenox.swift and
// Sources/ContenoxFFI, committed and checked for drift by bindings-uniffi/gen.sh swift-check)
// plus thin hand-written async helpers (Sources/Contenox/ContenoxAsync.swift).
//
// The native library is not built by SwiftPM: build it with cargo
// (`cargo build --release -p contenox-uniffi` gives libcontenox_uniffi.a / .dylib / .so) and
// point the linker at it, e.g. `swift build -Xlinker -L<dir of the library>`, or wrap the
// static library in an XCFramework for Apple platforms. See bindings-uniffi/README.md.
import PackageDescription

let package = Package(
    name: "Contenox",
    platforms: [.macOS(.v12), .iOS(.v15)],
    products: [
        .library(name: "Contenox", targets: ["Contenox"]),
    ],
    targets: [
        // The C declarations of the library's FFI (generated).
        .systemLibrary(name: "ContenoxFFI", path: "Sources/ContenoxFFI"),
        .target(
            name: "Contenox",
            dependencies: ["ContenoxFFI"],
            path: "Sources/Contenox",
            linkerSettings: [.linkedLibrary("contenox_uniffi")]
        ),
        // The conformance runner and the tests of ContenoxAsync.swift (Swift Testing):
        // bindings-uniffi/swift/ci.sh builds and runs them.
        .testTarget(
            name: "ContenoxTests",
            dependencies: ["Contenox"],
            path: "Tests/ContenoxTests"
        ),
    ]
)
