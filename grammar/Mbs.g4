// Grammar of .mbs files: the subset of Modelica 3.6 that mbs understands, written close to the
// Modelica specification's concrete syntax (appendix A) so that rule names can be looked up there.
// compiler/syntax/Parser.cpp walks the generated context tree directly and turns it into the AST of
// compiler/syntax/Ast.h; it relies on the shape of these rules (child order), so keep the two in
// step.
//
// Deviations from Modelica (on purpose):
//  - Only these class kinds: class, model, connector, record, block, package, type, function (with
//    optional `partial` / `encapsulated`, both ignored). No `operator`, `expandable`,
//    `der` short classes, `extends` class specifiers, the redeclaration of a class,
//    `external`. Algorithm sections (and `initial algorithm`) are parsed in every class; the
//    flattener executes them (docs/language.md, "Algorithms").
//    Their keywords (UNSUPPORTED_KEYWORD) are still reserved, so a model written for Modelica
//    fails with "the Modelica keyword 'expandable' is not supported" instead of a confusing message.
//    `initial` is a keyword: it starts `initial equation` (and `initial algorithm`) and is the event operator `initial()`; `der`, `pre`, `reinit` and
//    `terminal` are ordinary function names.
//  - Short classes take no prefixes (`type T = input Real;`); array dimensions are accepted.
//  - Type prefixes (`parameter`, `input`, `flow`, ...) may come in any order; duplicates and
//    conflicts are reported by the parser instead of by the grammar.
//  - Elements may only follow an equation section after `public` or `protected` (as in Modelica);
//    the class annotation `annotation(...);` is accepted at the end of a class only.
//  - Equations: `a = b`, `connect(a, b)`, `for ... loop ... end for`, `if ... end if`,
//    `when ... elsewhen ... end when` and call equations `f(...)` (the flattener accepts only
//    `reinit(x, e)`, and only inside `when`).
//  - Operator expressions are one flat rule (operatorExpression); precedence and Modelica's
//    restrictions are applied by Parser.cpp, exactly as in Modelica: `-a^2` is `-(a^2)`, `-a*b` is
//    `-(a*b)`; `2*-a`, `--a`, `not not a`, `a < b < c` and `a^b^c` are errors (the latter two are
//    non-associative in Modelica; we chose the error over right-associativity), each reported with
//    a hint ("write (a^b)^c or a^(b^c)") instead of a bare "unexpected '^'".
//  - `end` as an expression (`a[end - 1]`) is the token SUBSCRIPT_END, not END: Parser.cpp's token
//    pre-scan retypes an `end` that stands inside `[...]` and is not followed by a name, `for`,
//    `if` or `;`. Modelica makes `end` a primary everywhere, which lets every `end for;` /
//    `end M;` look like the start of an equation and ruins ANTLR's error recovery.
//  - Named function arguments are parsed; the flattener accepts them for user-defined functions
//    only. Array comprehensions (`{i for i in 1:n}`) and reductions
//    (`sum(x for i in 1:n)`) are Modelica's; only sum, product, min and max reduce (checked by
//    the flattener). An iterator filter `{e for i in 1:n if c}` is an mbs extension. The empty
//    array `{}` is accepted (Modelica wants at least one element).
//  - Quoted identifiers ('x y') are IDENT tokens that keep their quotes (Modelica: 'x' and x are
//    distinct names); global names (.Modelica.Blocks) are a leading '.' of typeSpecifier and
//    componentReference. Call statements `f(x);` are parsed; the flattener accepts assert(...)
//    only. `(a) = f(x)` is the equation `a = f(x)` (the first alternative wins).
//  - Annotations are parsed with the modification syntax and thrown away.
//  - Any character the lexer does not know becomes an ERROR_CHAR token, unterminated strings and
//    comments become their own tokens, so the lexer never fails; Parser.cpp reports them.
grammar Mbs;

tokens { SUBSCRIPT_END }

// ---------------------------------------------------------------- files and classes

storedDefinition
  : withinClause? classDefinition* EOF
  ;

withinClause
  : WITHIN name? ';'
  ;

// One expression and nothing else: the text of an objective of a study
// (compiler/driver/Objectives), parsed by parse_expression.
loneExpression
  : expression EOF
  ;

classDefinition
  : ENCAPSULATED? PARTIAL? classPrefix (longClassSpecifier | shortClassSpecifier)
    constrainingClause? ';'
  ;

classPrefix
  : CLASS | MODEL | CONNECTOR | RECORD | BLOCK | PACKAGE | TYPE | FUNCTION
  ;

// Modelica's composition and equation sections are inlined here so that no statement loop ends at
// a rule boundary: a stray token inside a class body is then seen by the loop it is in, which
// reports it and skips the statement (Parser.cpp's MbsErrorStrategy::sync).
longClassSpecifier
  : IDENT stringComment
    element*
    ( PUBLIC element* | PROTECTED element* | INITIAL? EQUATION equation*
    | INITIAL? ALGORITHM statement* )*
    ( annotation ';' )?
    END IDENT
  ;

shortClassSpecifier
  : IDENT '=' typeSpecifier arraySubscripts? classModification? comment
  | IDENT '=' ENUMERATION '(' ( enumList? | ':' ) ')' comment
  ;

// `type E = enumeration(a "first", b, c);` (Modelica 3.6, 4.9.5)
enumList
  : enumerationLiteral ( ',' enumerationLiteral )*
  ;

enumerationLiteral
  : IDENT comment
  ;

// ---------------------------------------------------------------- elements

element
  : importClause
  | extendsClause
  | elementPrefix* ( classDefinition | componentClause )
  ;

// `redeclare`, `final`, `inner`, `outer`, `replaceable` (any order; Parser.cpp checks them)
elementPrefix
  : REDECLARE | FINAL | INNER | OUTER | REPLACEABLE
  ;

// `constrainedby P(mods) "comment"` after a replaceable element (Modelica 3.6, section 7.3.2)
constrainingClause
  : CONSTRAINEDBY typeSpecifier classModification? comment
  ;

importClause
  : IMPORT ( IDENT '=' name | name ( DOT_STAR | '.' '*' | '.' '{' importList '}' )? ) comment ';'
  ;

// `import A.B.{C, D};`: several single imports (Modelica 3.6, section 13.2.1)
importList
  : IDENT ( ',' IDENT )*
  ;

extendsClause
  : EXTENDS typeSpecifier classModification? annotation? ';'
  ;

componentClause
  : typePrefix* typeSpecifier arraySubscripts? componentDeclaration (',' componentDeclaration)*
    constrainingClause? ';'
  ;

typePrefix
  : FLOW | STREAM | DISCRETE | PARAMETER | CONSTANT | INPUT | OUTPUT
  ;

// A leading '.' makes a global name (Modelica 3.6, 5.3.3): looked up from the top level.
typeSpecifier
  : '.'? name
  ;

componentDeclaration
  : IDENT arraySubscripts? modification? conditionAttribute? comment
  ;

// `A a if cond;`: a conditional component (Modelica 3.6, section 4.4.5)
conditionAttribute
  : IF expression
  ;

// ---------------------------------------------------------------- modifications

modification
  : classModification ( '=' expression )?
  | '=' expression
  ;

classModification
  : '(' ( argument ( ',' argument )* )? ')'
  ;

argument
  : EACH? FINAL? name modification? stringComment
  | REDECLARE EACH? FINAL? REPLACEABLE? elementRedeclaration
  ;

// `redeclare C sub(mods)` or `redeclare model M = C` inside a modification (section 7.3)
elementRedeclaration
  : classPrefix shortClassSpecifier
  | typePrefix* typeSpecifier arraySubscripts? componentDeclaration constrainingClause?
  ;

// ---------------------------------------------------------------- equations

equation
  : ( simpleExpression '=' expression
    | '(' outputExpressionList ')' '=' componentReference functionCallArgs
    | connectClause
    | forEquation
    | ifEquation
    | whenEquation
    | componentReference functionCallArgs
    ) comment ';'
  ;

connectClause
  : CONNECT '(' componentReference ',' componentReference ')'
  ;

forEquation
  : FOR forIndices LOOP equation* END FOR
  ;

forIndices
  : forIndex ( ',' forIndex )*
  ;

// `for i loop` without a range: deduced from the arrays the body indexes with i (Modelica
// 11.2.2.2; the flattener does it for for-equations and for-statements)
forIndex
  : IDENT ( IN expression )?
  ;

ifEquation
  : IF expression THEN equation*
    ( ELSEIF expression THEN equation* )*
    ( ELSE equation* )?
    END IF
  ;

whenEquation
  : WHEN expression THEN equation*
    ( ELSEWHEN expression THEN equation* )*
    END WHEN
  ;

// ---------------------------------------------------------------- algorithms

statement
  : ( componentReference ':=' expression
    | '(' outputExpressionList ')' ':=' componentReference functionCallArgs
    | componentReference functionCallArgs
    | RETURN
    | BREAK
    | ifStatement
    | forStatement
    | whileStatement
    ) comment ';'
  ;

// `(a, , b)`: an empty place drops that output.
outputExpressionList
  : componentReference? ( ',' componentReference? )*
  ;

ifStatement
  : IF expression THEN statement*
    ( ELSEIF expression THEN statement* )*
    ( ELSE statement* )?
    END IF
  ;

forStatement
  : FOR forIndices LOOP statement* END FOR
  ;

whileStatement
  : WHILE expression LOOP statement* END WHILE
  ;

// ---------------------------------------------------------------- expressions (lowest first)

expression
  : simpleExpression
  | ifExpression
  ;

ifExpression
  : IF expression THEN expression ( ELSEIF expression THEN expression )* ELSE expression
  ;

// Range: a:b or a:b:c.
simpleExpression
  : operatorExpression ( ':' operatorExpression ( ':' operatorExpression )? )?
  ;

// Operands and operators as a flat list; Parser.cpp applies Modelica's precedence
//   or < and < not < relational < + - (binary, and the sign of the first term) < * / < ^
// and its restrictions (a sign only at the start of an arithmetic expression, one `not` per
// logical factor, no chained comparisons or powers). A flat list instead of one rule per level
// keeps the parse tree small (a nested rule per level costs ~12 tree nodes per operand) and
// keeps a chain of 100,000 prefixes or operators from nesting anything.
operatorExpression
  : ( NOT | '+' | '-' | '.+' | '.-' )*
    primary
    ( ( OR | AND | '<' | '<=' | '>' | '>=' | '==' | '<>' | '+' | '-' | '.+' | '.-'
      | '*' | '/' | '.*' | './' | '^' | '.^' )
      ( NOT | '+' | '-' | '.+' | '.-' )*
      primary
    )*
  ;

primary
  : UNSIGNED_NUMBER
  | STRING
  | TRUE
  | FALSE
  | componentReference functionCallArgs?
  | INITIAL '(' ')'
  | '(' expression ')'
  | '[' expressionList ( ';' expressionList )* ']'
  | '{' arrayArguments? '}'
  | SUBSCRIPT_END
  ;

// a.b[i, j].c
componentReference
  : '.'? IDENT arraySubscripts? ( '.' IDENT arraySubscripts? )*
  ;

name
  : IDENT ( '.' IDENT )*
  ;

functionCallArgs
  : '(' functionArguments? ')'
  ;

// `f(x for i in 1:n)` is a reduction; deciding it after the first argument keeps this LL(1).
functionArguments
  : functionArgument ( FOR forIndices iteratorFilter? | ( ',' functionArgument )* )
  ;

functionArgument
  : IDENT '=' expression
  | expression
  ;

arrayArguments
  : expression ( FOR forIndices iteratorFilter? | ( ',' expression )* )
  ;

// `{e for i in 1:n if c}`: an mbs extension (Modelica has no filter). No expression continues
// with `if`, so the filter is decided by one token after the last range.
iteratorFilter
  : IF expression
  ;

expressionList
  : expression ( ',' expression )*
  ;

arraySubscripts
  : '[' subscript ( ',' subscript )* ']'
  ;

subscript
  : ':'
  | expression
  ;

// ---------------------------------------------------------------- comments and annotations

comment
  : stringComment annotation?
  ;

stringComment
  : ( STRING ( '+' STRING )* )?
  ;

annotation
  : ANNOTATION classModification
  ;

// ================================================================ lexer

// Keywords used by mbs.
ALGORITHM    : 'algorithm';
ANNOTATION   : 'annotation';
AND          : 'and';
BLOCK        : 'block';
CLASS        : 'class';
CONNECT      : 'connect';
CONNECTOR    : 'connector';
CONSTANT     : 'constant';
CONSTRAINEDBY : 'constrainedby';
DISCRETE     : 'discrete';
EACH         : 'each';
ELSE         : 'else';
ELSEIF       : 'elseif';
ELSEWHEN     : 'elsewhen';
ENCAPSULATED : 'encapsulated';
ENUMERATION  : 'enumeration';
END          : 'end';
EQUATION     : 'equation';
EXTENDS      : 'extends';
FALSE        : 'false';
FINAL        : 'final';
FLOW         : 'flow';
FOR          : 'for';
FUNCTION     : 'function';
IF           : 'if';
IMPORT       : 'import';
INITIAL      : 'initial';
IN           : 'in';
INNER        : 'inner';
INPUT        : 'input';
LOOP         : 'loop';
MODEL        : 'model';
NOT          : 'not';
OR           : 'or';
OUTER        : 'outer';
OUTPUT       : 'output';
PACKAGE      : 'package';
PARAMETER    : 'parameter';
PARTIAL      : 'partial';
PROTECTED    : 'protected';
PUBLIC       : 'public';
RECORD       : 'record';
REDECLARE    : 'redeclare';
REPLACEABLE  : 'replaceable';
RETURN       : 'return';
STREAM       : 'stream';
THEN         : 'then';
TRUE         : 'true';
TYPE         : 'type';
WHEN         : 'when';
WHILE        : 'while';
BREAK        : 'break';
WITHIN       : 'within';

// Modelica keywords mbs does not support: reserved so that they cannot be used as names.
// Parser.cpp names them in its messages ("'when' is not supported by mbs").
UNSUPPORTED_KEYWORD
  : 'expandable' | 'external' | 'impure' | 'operator' | 'pure'
  ;

// Operators and punctuation.
DOT_PLUS   : '.+';
DOT_MINUS  : '.-';
DOT_STAR   : '.*';
DOT_SLASH  : './';
DOT_CARET  : '.^';
PLUS       : '+';
MINUS      : '-';
STAR       : '*';
SLASH      : '/';
CARET      : '^';
EQ         : '==';
NEQ        : '<>';
LE         : '<=';
GE         : '>=';
LT         : '<';
GT         : '>';
ASSIGN     : '=';
COLON_EQ   : ':=';
LPAREN     : '(';
RPAREN     : ')';
LBRACKET   : '[';
RBRACKET   : ']';
LBRACE     : '{';
RBRACE     : '}';
COMMA      : ',';
SEMICOLON  : ';';
COLON      : ':';
DOT        : '.';

// A quoted identifier 'x y' (Modelica 3.6, 2.3.1) keeps its quotes: they are part of the name.
IDENT
  : [a-zA-Z_] [a-zA-Z_0-9]*
  | '\'' ( ~['\\\r\n] | '\\' ~[\r\n] )+ '\''
  ;

// 1, 1.5, 1., .5, 1e-3, 2.5E+4. `1.*x` lexes as `1.` `*` `x` (the longest match), which has the
// same value as `1 .* x`.
UNSIGNED_NUMBER
  : DIGITS ( '.' DIGITS? )? EXPONENT?
  | '.' DIGITS EXPONENT?
  ;

fragment DIGITS   : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;

// Strings may span lines; escapes are checked and decoded by the parser.
STRING
  : '"' ( ~["\\] | '\\' . )* '"'
  ;

// The same without the closing quote: always one character shorter than STRING when the string
// is closed, so it only wins for a string that runs to the end of the file.
UNTERMINATED_STRING
  : '"' ( ~["\\] | '\\' . )*
  ;

WS            : [ \t\r\n\f\u000B\uFEFF]+ -> skip ;
LINE_COMMENT  : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;

// A block comment without its `*/`: cannot contain `*/`, so it is shorter than BLOCK_COMMENT
// whenever the comment is closed.
UNTERMINATED_COMMENT
  : '/*' ( ~'*' | '*'+ ~[*/] )* '*'*
  ;

// Anything else: reported by the parser as an invalid character, so the lexer never fails.
ERROR_CHAR
  : .
  ;
