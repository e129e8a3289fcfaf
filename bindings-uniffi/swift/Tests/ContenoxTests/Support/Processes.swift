// Child processes and loopback HTTP for the test runner, on Foundation and the C library only
// (a SwiftPM package here cannot fetch dependencies). Blocking reads run on threads of their
// own, never on Swift's cooperative pool: with two cores that pool has two threads, and the
// engine's callbacks into Swift (host tools, hooks, waitFor) need them.

import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct RunnerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension NSLock {
    /// `body` with the lock held (a synchronous call, so async code may use it).
    func sync<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// Run `body` on a thread of its own and await its result.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
        }
        thread.start()
    }
}

/// Mark a descriptor close-on-exec: the pipes Foundation makes are inherited by every process
/// started later otherwise, the engine's MCP servers included, and a fake server whose stdin is
/// held open by another process never sees its end.
private func closeOnExec(_ fd: Int32) {
    _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
}

/// A child process with a piped stdin (closing it is how the project's fake servers are told to
/// stop), its stdout read by a thread of its own, its stderr the test's.
final class Child: @unchecked Sendable {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()
    private var lines: [String] = []
    private var waiters: [CheckedContinuation<String?, Never>] = []
    private var ended = false

    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
         discardOutput: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        for fd in [input.fileHandleForReading.fileDescriptor, input.fileHandleForWriting.fileDescriptor,
                   output.fileHandleForReading.fileDescriptor, output.fileHandleForWriting.fileDescriptor] {
            closeOnExec(fd)
        }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = discardOutput ? FileHandle.nullDevice : FileHandle.standardError
        do {
            try process.run()
        } catch {
            throw RunnerError("cannot start \(executable): \(error)")
        }
        try? output.fileHandleForWriting.close()
        try? input.fileHandleForReading.close()
        let fd = output.fileHandleForReading.fileDescriptor
        // Reads every line to the end, so the child never blocks on a full pipe.
        Thread { [self] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { break }
                for byte in buffer[0..<n] {
                    if byte == 10 {
                        deliver(String(decoding: pending, as: UTF8.self))
                        pending.removeAll()
                    } else {
                        pending.append(byte)
                    }
                }
            }
            lock.lock()
            ended = true
            let rest = waiters
            waiters.removeAll()
            lock.unlock()
            for w in rest { w.resume(returning: nil) }
        }.start()
    }

    private func deliver(_ line: String) {
        lock.lock()
        if waiters.isEmpty {
            lines.append(line)
            lock.unlock()
        } else {
            let w = waiters.removeFirst()
            lock.unlock()
            w.resume(returning: line)
        }
    }

    /// The next line of its stdout; nil once it has closed its stdout.
    func nextLine() async -> String? {
        await withCheckedContinuation { continuation in
            lock.lock()
            if !lines.isEmpty {
                let line = lines.removeFirst()
                lock.unlock()
                continuation.resume(returning: line)
            } else if ended {
                lock.unlock()
                continuation.resume(returning: nil)
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }

    var pid: Int32 { process.processIdentifier }

    /// Close its stdin and wait for it to exit, at most `grace` seconds, then kill it.
    func stop(grace: Double = 5) async {
        try? input.fileHandleForWriting.close()
        await waitOrKill(grace: grace)
    }

    /// Kill it (and its process group, when it leads one) and wait for it.
    func kill() async {
        if process.isRunning { _ = Glibc.kill(pid, SIGKILL) }
        await waitOrKill(grace: 5)
    }

    private func waitOrKill(grace: Double) async {
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning, Date() < deadline {
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        if process.isRunning {
            _ = Glibc.kill(pid, SIGKILL)
            let hard = Date().addingTimeInterval(5)
            while process.isRunning, Date() < hard { try? await Task.sleep(nanoseconds: 20_000_000) }
        }
    }
}

/// A free TCP port on 127.0.0.1 (bound, read, released).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RunnerError("socket: errno \(errno)") }
    defer { close(fd) }
    var addr = loopback(port: 0)
    let bound = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw RunnerError("bind: errno \(errno)") }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    return Int(UInt16(bigEndian: addr.sin_port))
}

private func loopback(port: Int) -> sockaddr_in {
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = UInt16(port).bigEndian
    addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return addr
}

/// A connected TCP socket to 127.0.0.1:`port`, or nil.
private func connectLoopback(_ port: Int, timeoutSeconds: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    closeOnExec(fd)
    var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var addr = loopback(port: port)
    let ok = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    if ok != 0 {
        close(fd)
        return nil
    }
    return fd
}

/// True when something listens on 127.0.0.1:`port`.
func listening(_ port: Int) -> Bool {
    guard let fd = connectLoopback(port, timeoutSeconds: 1) else { return false }
    close(fd)
    return true
}

/// One HTTP/1.0 request to 127.0.0.1 (the connection closes after the answer, so the body is
/// what comes before the end): the status and the body's text. 10 s per read at most.
func httpLoopback(_ method: String, port: Int, path: String) async throws -> (status: Int, body: String) {
    let (status, _, body) = try await httpLoopbackWithHead(method, port: port, path: path)
    return (status, body)
}

/// [`httpLoopback`] with the response's head (status line and headers) too.
func httpLoopbackWithHead(_ method: String, port: Int, path: String) async throws -> (status: Int, head: String, body: String) {
    try await onThread {
        guard let fd = connectLoopback(port, timeoutSeconds: 10) else {
            throw RunnerError("\(method) \(path): cannot connect to 127.0.0.1:\(port)")
        }
        defer { close(fd) }
        let request = Array("\(method) \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 0\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw RunnerError("\(method) \(path): send failed (errno \(errno))") }
            sent += n
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw RunnerError("\(method) \(path): no answer (errno \(errno))") }
            if n == 0 { break }
            response.append(contentsOf: buffer[0..<n])
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let split = (0...max(0, response.count - 4)).first(where: { Array(response[$0..<min($0 + 4, response.count)]) == separator })
        else { throw RunnerError("\(method) \(path): no HTTP header in the answer") }
        let head = String(decoding: response[0..<split], as: UTF8.self)
        let parts = head.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { throw RunnerError("\(method) \(path): bad status line") }
        return (status, head, String(decoding: response[(split + 4)...], as: UTF8.self))
    }
}
