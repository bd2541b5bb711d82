//! Checking a text evaluates its constant expressions, as compiling it did under minijinja 2.
//!
//! minijinja 2 folded every expression built only of literals and operators while it
//! compiled (`('x' * 100000000) ~ ('x' * 100000000)`), so checking such a text at save made
//! the worker meet its memory or time limit, and the save was refused with the sandbox's own
//! message. minijinja 3 folds only results up to 1 KiB and leaves larger ones to run time:
//! compiling is harmless, and the bomb would go off in every run instead. To keep refusing it
//! at save, the check walks the text's syntax tree and evaluates here, in the worker, each
//! expression 2.x folded: literals (lists, tuples and maps of them too) and the operators and
//! comparisons over them, with minijinja's own operators and no fuel, under the worker's limits.
//! What made the 2.x compiler meet a limit makes this check meet it; an ordinary text's few
//! constants cost microseconds. Like 2.x, an operation that fails (`1 / 0`) is left to run time.
//!
//! Why evaluate rather than estimate sizes from the source: sizes compose (`'x' * (10 ** 8)`,
//! `(s ~ s) * n`), so an estimate would reimplement the operators and could disagree with them.
//! Why not a trial run of the whole text: its inputs are not known at save. The syntax tree comes
//! from minijinja's `unstable_machinery` (no semver promise); every match below names every
//! variant, so a changed tree fails the build instead of skipping part of a text.

use minijinja::machinery::ast::{self, BinOpKind, CallArg, CompareOpKind, Expr, Stmt, UnaryOpKind};
use minijinja::machinery::{parse, parse_expr};
use minijinja::value::Tuple;
use minijinja::{context, Environment, Value};
use std::cell::Cell;
use std::collections::BTreeMap;
use trellis_model::validate::Text;

/// Evaluates the constant expressions of `text`, which has compiled, and says how many
/// operations that took. A constant that is too much stops the worker at its limit instead,
/// which is the check's answer.
pub fn evaluate_constants(text: Text<'_>) -> usize {
    let folder = Folder { env: Environment::new(), operations: Cell::new(0) };
    match text {
        Text::Expression(source) => {
            if let Ok(expr) = parse_expr(source) {
                folder.fold(&expr);
            }
        }
        Text::Template(source) if trellis_model::expr::is_template(source) => {
            if let Ok(template) = parse(source, "<template>", Default::default()) {
                folder.visit(&template);
            }
        }
        Text::Template(_) => {}
    }
    folder.operations.get()
}

/// Evaluates operators with minijinja's own semantics: an environment with no fuel, so only
/// the worker's limits bound them (as they bounded 2.x's compiler).
struct Folder {
    env: Environment<'static>,
    operations: Cell<usize>,
}

impl Folder {
    /// The value of `expr` if it is constant (evaluated bottom-up, each operation once); every
    /// constant part of a non-constant `expr` is evaluated all the same.
    fn fold(&self, expr: &Expr<'_>) -> Option<Value> {
        match expr {
            Expr::Const(c) => Some(c.value.clone()),
            Expr::List(l) => self.fold_all(&l.items).map(Value::from),
            Expr::Tuple(t) => self.fold_all(&t.items).map(|items| Value::from(Tuple::from(items))),
            Expr::Map(m) => {
                let (keys, values) = (self.fold_all(&m.keys), self.fold_all(&m.values));
                let pairs = keys?.into_iter().zip(values?);
                Some(Value::from_object(pairs.collect::<BTreeMap<Value, Value>>()))
            }
            Expr::UnaryOp(u) => {
                let operand = self.fold(&u.expr)?;
                let source = match u.op {
                    UnaryOpKind::Not => "not a",
                    UnaryOpKind::Neg => "-a",
                };
                self.apply(source, operand, Value::UNDEFINED)
            }
            Expr::BinOp(b) => {
                let (left, right) = (self.fold(&b.left), self.fold(&b.right));
                self.apply(binop_source(b.op), left?, right?)
            }
            Expr::Compare(c) => self.fold_compare(c),
            Expr::Var(_) => None,
            Expr::Slice(s) => {
                self.fold(&s.expr);
                [&s.start, &s.stop, &s.step].into_iter().flatten().for_each(|e| drop(self.fold(e)));
                None
            }
            Expr::IfExpr(i) => {
                [Some(&i.test_expr), Some(&i.true_expr), i.false_expr.as_ref()]
                    .into_iter()
                    .flatten()
                    .for_each(|e| drop(self.fold(e)));
                None
            }
            Expr::Filter(f) => {
                f.expr.iter().for_each(|e| drop(self.fold(e)));
                self.args(&f.args)
            }
            Expr::Test(t) => {
                self.fold(&t.expr);
                self.args(&t.args)
            }
            Expr::GetAttr(g) => {
                self.fold(&g.expr);
                None
            }
            Expr::GetItem(g) => {
                self.fold(&g.expr);
                self.fold(&g.subscript_expr);
                None
            }
            Expr::Call(c) => self.call(c),
        }
    }

    /// Every item's value if all are constant; every item is evaluated either way.
    fn fold_all(&self, items: &[Expr<'_>]) -> Option<Vec<Value>> {
        let folded: Vec<Option<Value>> = items.iter().map(|e| self.fold(e)).collect();
        folded.into_iter().collect()
    }

    /// `a < b < c` as 2.x folded it: false at the first comparison that fails.
    fn fold_compare(&self, compare: &ast::Compare<'_>) -> Option<Value> {
        let first = self.fold(&compare.expr);
        let operands: Vec<Option<Value>> = compare.ops.iter().map(|op| self.fold(&op.expr)).collect();
        let mut left = first?;
        for (op, right) in compare.ops.iter().zip(operands) {
            let right = right?;
            if !self.apply(compare_source(op.op), left, right.clone())?.is_true() {
                return Some(Value::from(false));
            }
            left = right;
        }
        Some(Value::from(true))
    }

    fn call(&self, call: &ast::Call<'_>) -> Option<Value> {
        self.fold(&call.expr);
        self.args(&call.args)
    }

    /// Evaluates the constants among a call's arguments; a call is never constant.
    fn args(&self, args: &[CallArg<'_>]) -> Option<Value> {
        for arg in args {
            match arg {
                CallArg::Pos(e) | CallArg::Kwarg(_, e) | CallArg::PosSplat(e) | CallArg::KwargSplat(e) => {
                    self.fold(e);
                }
            }
        }
        None
    }

    /// `source` (over `a` and `b`) with minijinja's own operators; `None` if it fails.
    fn apply(&self, source: &str, a: Value, b: Value) -> Option<Value> {
        self.operations.set(self.operations.get() + 1);
        self.env.compile_expression(source).ok()?.eval(context! { a => a, b => b }).ok()
    }

    /// Every expression in a template's statements, in bodies of every kind.
    fn visit(&self, stmt: &Stmt<'_>) {
        let exprs = |items: &[&Expr<'_>]| items.iter().for_each(|e| drop(self.fold(e)));
        let body = |stmts: &[Stmt<'_>]| stmts.iter().for_each(|s| self.visit(s));
        match stmt {
            Stmt::Template(t) => body(&t.children),
            Stmt::EmitExpr(e) => exprs(&[&e.expr]),
            Stmt::EmitRaw(_) => {}
            Stmt::ForLoop(f) => {
                exprs(&[&f.target, &f.iter]);
                f.filter_expr.iter().for_each(|e| drop(self.fold(e)));
                body(&f.body);
                body(&f.else_body);
            }
            Stmt::IfCond(i) => {
                exprs(&[&i.expr]);
                body(&i.true_body);
                body(&i.false_body);
            }
            Stmt::WithBlock(w) => {
                w.assignments.iter().for_each(|(target, value)| exprs(&[target, value]));
                body(&w.body);
            }
            Stmt::Set(s) => exprs(&[&s.target, &s.expr]),
            Stmt::SetBlock(s) => {
                exprs(&[&s.target]);
                s.filter.iter().for_each(|e| drop(self.fold(e)));
                body(&s.body);
            }
            Stmt::AutoEscape(a) => {
                exprs(&[&a.enabled]);
                body(&a.body);
            }
            Stmt::FilterBlock(f) => {
                exprs(&[&f.filter]);
                body(&f.body);
            }
            Stmt::Block(b) => body(&b.body),
            Stmt::Import(i) => exprs(&[&i.expr, &i.name]),
            Stmt::FromImport(f) => {
                exprs(&[&f.expr]);
                for (name, alias) in &f.names {
                    exprs(&[name]);
                    alias.iter().for_each(|e| drop(self.fold(e)));
                }
            }
            Stmt::Extends(e) => exprs(&[&e.name]),
            Stmt::Include(i) => exprs(&[&i.name]),
            Stmt::Macro(m) => self.visit_macro(m),
            Stmt::CallBlock(c) => {
                self.call(&c.call);
                self.visit_macro(&c.macro_decl);
            }
            Stmt::Do(d) => drop(self.call(&d.call)),
        }
    }

    fn visit_macro(&self, m: &ast::Macro<'_>) {
        m.args.iter().chain(&m.defaults).for_each(|e| drop(self.fold(e)));
        m.body.iter().for_each(|s| self.visit(s));
    }
}

fn binop_source(op: BinOpKind) -> &'static str {
    match op {
        BinOpKind::Eq => "a == b",
        BinOpKind::Ne => "a != b",
        BinOpKind::Lt => "a < b",
        BinOpKind::Lte => "a <= b",
        BinOpKind::Gt => "a > b",
        BinOpKind::Gte => "a >= b",
        BinOpKind::ScAnd => "a and b",
        BinOpKind::ScOr => "a or b",
        BinOpKind::Add => "a + b",
        BinOpKind::Sub => "a - b",
        BinOpKind::Mul => "a * b",
        BinOpKind::Div => "a / b",
        BinOpKind::FloorDiv => "a // b",
        BinOpKind::Rem => "a % b",
        BinOpKind::Pow => "a ** b",
        BinOpKind::Concat => "a ~ b",
        BinOpKind::In => "a in b",
    }
}

fn compare_source(op: CompareOpKind) -> &'static str {
    match op {
        CompareOpKind::Eq => "a == b",
        CompareOpKind::Ne => "a != b",
        CompareOpKind::Lt => "a < b",
        CompareOpKind::Lte => "a <= b",
        CompareOpKind::Gt => "a > b",
        CompareOpKind::Gte => "a >= b",
        CompareOpKind::In => "a in b",
        CompareOpKind::NotIn => "a not in b",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operations(text: Text<'_>) -> usize {
        evaluate_constants(text)
    }

    #[test]
    fn constants_past_what_minijinja_3_folds_are_evaluated_wherever_they_are() {
        // `'x' * 2000` is over the 1 KiB minijinja 3 folds itself.
        assert_eq!(operations(Text::Expression("('x' * 2000) ~ ('y' * 2000)")), 3);
        assert_eq!(operations(Text::Expression("input.a ~ ('x' * 2000)")), 1);
        assert_eq!(operations(Text::Expression("input.a | default(['x' * 2000][0], true)")), 1);
        assert_eq!(operations(Text::Expression("f(k=-(2 ** 70)) if input.a else {'k': 1 < 2 < 3}")), 4);
        let template = "{% for i in input.xs %}{% if i %}{{ ('x' * 2000) ~ i }}{% endif %}{% endfor %}";
        assert_eq!(operations(Text::Template(template)), 1);
        let nested = "{% macro m(a=('x' * 9) ~ 'y') %}{% set v = 1 + 2 %}{% endmacro %}{{ m() }}";
        assert_eq!(operations(Text::Template(nested)), 3);
    }

    #[test]
    fn texts_without_constant_operations_evaluate_nothing() {
        assert_eq!(operations(Text::Expression("input.a ~ input.b | upper")), 0);
        assert_eq!(operations(Text::Template("https://x/{{ input.id }}")), 0);
        // Plain text is not a template, and is not parsed as one.
        assert_eq!(operations(Text::Template("{ 'x' * 2000 }")), 0);
    }

    #[test]
    fn an_operation_that_fails_is_left_to_run_time_as_in_minijinja_2() {
        assert_eq!(operations(Text::Expression("(1 / 0) ~ 'x'")), 1);
    }
}
