import KeyedArchive
import XCTest

/// The examples of Docs/MigratingFromNSKeyedArchiver.md, kept compiling and true.
final class DocumentationExampleTests: XCTestCase {
    final class Employee: KeyedArchiving {
        var name: String
        var salary: Int64
        var manager: Employee?
        var reports: [Employee] = []

        init(name: String, salary: Int64) {
            self.name = name
            self.salary = salary
        }

        func encode(with coder: KeyedArchiver) throws {
            try coder.encode(name, forKey: "name")
            coder.encode(salary, forKey: "salary")
            try coder.encodeConditionalObject(manager, forKey: "manager")
            try coder.encode(reports, forKey: "reports")
        }

        init(coder: KeyedUnarchiver) throws {
            name = try coder.decodeObject(of: String.self, forKey: "name") ?? ""
            salary = try coder.decodeInt64(forKey: "salary")
        }

        func decodeReferences(with coder: KeyedUnarchiver) throws {
            manager = try coder.decodeObject(of: Employee.self, forKey: "manager")
            reports = try coder.decodeArrayOfObjects(ofClass: Employee.self, forKey: "reports") ?? []
        }
    }

    func testEmployeeCycle() throws {
        let boss = Employee(name: "Ada", salary: 10)
        let report = Employee(name: "Bob", salary: 5)
        boss.reports = [report]
        report.manager = boss
        let data = try KeyedArchiver.archivedData(withRootObject: boss, format: .binary)
        let copy = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Employee.self, from: data))
        XCTAssertTrue(copy.reports[0].manager === copy)
        XCTAssertEqual(copy.reports[0].name, "Bob")
        XCTAssertEqual(copy.salary, 10)
        boss.reports = []
        copy.reports = []
    }

    func testUnkeyedValuesUseDollarKeys() throws {
        final class Pair: KeyedArchiving {
            var first = "", second = 0
            init() {}
            func encode(with coder: KeyedArchiver) throws {
                try coder.encode(first)
                try coder.encode(second)
            }
            init(coder: KeyedUnarchiver) throws {
                first = try coder.decodeObject(of: [.string]) as? String ?? ""
                second = try coder.decodeObject(of: [.number]) as? Int ?? 0
            }
        }
        let pair = Pair()
        pair.first = "x"
        pair.second = 9
        let data = try KeyedArchiver.archivedData(withRootObject: pair, format: .binary)
        let plist = try PropertyList.decode(data)
        let object = try XCTUnwrap(plist["$objects"]?.arrayValue?.first { $0["$0"] != nil })
        XCTAssertNotNil(object["$1"]?.uidValue)
        let back = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Pair.self, from: data))
        XCTAssertEqual(back.first, "x")
        XCTAssertEqual(back.second, 9)
    }
}
