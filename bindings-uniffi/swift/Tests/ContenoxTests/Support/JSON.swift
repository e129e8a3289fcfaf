// A JSON value for the test runner: the scenario files are read with it, and the few values the
// runner writes itself (config, answers) are written with it, compact with sorted keys as the
// engine writes JSON. Hand-written so booleans and numbers never blur (Foundation's
// JSONSerialization hands both back as NSNumber on Linux) and the behaviour is the same on every
// platform. Everything the engine or a fake server produces goes into the trace as its own text.

struct JSONError: Error, CustomStringConvertible {
    let description: String
}

enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    static func parse(_ text: String) throws -> JSON {
        var parser = Parser(bytes: Array(text.utf8))
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.at == parser.bytes.count else { throw parser.error("trailing characters") }
        return value
    }

    subscript(key: String) -> JSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// Present and not null.
    func has(_ key: String) -> Bool {
        if let v = self[key], v != .null { return true }
        return false
    }

    var string: String? { if case .string(let s) = self { return s } else { return nil } }
    var bool: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    var object: [String: JSON]? { if case .object(let o) = self { return o } else { return nil } }
    var array: [JSON]? { if case .array(let a) = self { return a } else { return nil } }
    var int: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d == d.rounded() && abs(d) < 9.0e18: return Int64(d)
        default: return nil
        }
    }

    /// Compact JSON text, object keys sorted (as the engine writes it).
    var text: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? String(d) : "null"
        case .string(let s): return jsonQuote(s)
        case .array(let a): return "[" + a.map(\.text).joined(separator: ",") + "]"
        case .object(let o):
            return "{" + o.keys.sorted().map { jsonQuote($0) + ":" + o[$0]!.text }.joined(separator: ",") + "}"
        }
    }
}

/// A JSON string literal of `s`.
func jsonQuote(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case "\u{08}": out += "\\b"
        case "\u{0C}": out += "\\f"
        default:
            if scalar.value < 0x20 {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}

private struct Parser {
    let bytes: [UInt8]
    var at = 0

    func error(_ what: String) -> JSONError { JSONError(description: "JSON: \(what) at byte \(at)") }

    mutating func skipSpace() {
        while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
    }

    mutating func literal(_ word: String, _ value: JSON) throws -> JSON {
        let w = Array(word.utf8)
        guard at + w.count <= bytes.count, Array(bytes[at..<at + w.count]) == w else { throw error("bad literal") }
        at += w.count
        return value
    }

    mutating func value(depth: Int) throws -> JSON {
        guard depth < 512 else { throw error("nested too deeply") }
        guard at < bytes.count else { throw error("unexpected end") }
        switch bytes[at] {
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "["):
            at += 1
            var items: [JSON] = []
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
            while true {
                skipSpace()
                items.append(try value(depth: depth + 1))
                skipSpace()
                guard at < bytes.count else { throw error("unterminated array") }
                if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                if bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
                throw error("expected , or ]")
            }
        case UInt8(ascii: "{"):
            at += 1
            var members: [String: JSON] = [:]
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(members) }
            while true {
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw error("expected a key") }
                let key = try string()
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw error("expected :") }
                at += 1
                skipSpace()
                members[key] = try value(depth: depth + 1)
                skipSpace()
                guard at < bytes.count else { throw error("unterminated object") }
                if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                if bytes[at] == UInt8(ascii: "}") { at += 1; return .object(members) }
                throw error("expected , or }")
            }
        default:
            return try number()
        }
    }

    mutating func number() throws -> JSON {
        let start = at
        var isFloat = false
        while at < bytes.count {
            let c = bytes[at]
            if (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "-") || c == UInt8(ascii: "+") {
                at += 1
            } else if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
                isFloat = true
                at += 1
            } else {
                break
            }
        }
        let text = String(decoding: bytes[start..<at], as: UTF8.self)
        if !isFloat, let i = Int64(text) { return .int(i) }
        guard !text.isEmpty, let d = Double(text) else { throw error("bad value") }
        return .double(d)
    }

    mutating func hex4() throws -> UInt32 {
        guard at + 4 <= bytes.count, let v = UInt32(String(decoding: bytes[at..<at + 4], as: UTF8.self), radix: 16)
        else { throw error("bad \\u escape") }
        at += 4
        return v
    }

    mutating func string() throws -> String {
        at += 1 // the opening quote
        var out: [UInt8] = []
        while true {
            guard at < bytes.count else { throw error("unterminated string") }
            let c = bytes[at]
            at += 1
            if c == UInt8(ascii: "\"") { break }
            if c != UInt8(ascii: "\\") { out.append(c); continue }
            guard at < bytes.count else { throw error("unterminated escape") }
            let e = bytes[at]
            at += 1
            switch e {
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "u"):
                var v = try hex4()
                if v >= 0xD800, v < 0xDC00, at + 6 <= bytes.count, bytes[at] == UInt8(ascii: "\\"),
                   bytes[at + 1] == UInt8(ascii: "u") {
                    at += 2
                    let low = try hex4()
                    v = 0x10000 + ((v - 0xD800) << 10) + (low &- 0xDC00)
                }
                out.append(contentsOf: Array(String(Unicode.Scalar(v) ?? "\u{FFFD}").utf8))
            default: out.append(e) // \" \\ \/
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
