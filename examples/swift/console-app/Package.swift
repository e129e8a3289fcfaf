// swift-tools-version:5.9
// A console app on the contenox Swift package (bindings-uniffi/swift). In your own project,
// depend on your copy of that package instead of the path below, and point the linker at the
// native library cargo builds (`cargo build --release -p contenox-uniffi`):
//
//   swift build -Xlinker -L<dir of libcontenox_uniffi> -Xlinker -rpath -Xlinker <same dir>
import PackageDescription

let package = Package(
    name: "contenox-swift-example",
    platforms: [.macOS(.v12)],
    dependencies: [
        .package(name: "Contenox", path: "../../../bindings-uniffi/swift"),
    ],
    targets: [
        .executableTarget(
            name: "contenox-swift-example",
            dependencies: [.product(name: "Contenox", package: "Contenox")],
            path: "Sources/contenox-swift-example"
        ),
    ]
)
