// The semantics of physical groups (docs/semantics.md): the unit square cut at x = 0.5 into two
// materials, 'soft' (10) and 'hard' (11), every cell also in 'plate' (12); the bottom side is
// 'bottom' (1), its left half also 'clamped' (2); 'left' (3), 'top' (4); the cut is an interior
// interface, 'interface' (5); the right side carries no tag.
Point(1) = {0, 0, 0, 0.125}; Point(2) = {0.5, 0, 0, 0.125}; Point(3) = {1, 0, 0, 0.125};
Point(4) = {1, 1, 0, 0.125}; Point(5) = {0.5, 1, 0, 0.125}; Point(6) = {0, 1, 0, 0.125};
Line(1) = {1, 2}; Line(2) = {2, 3}; Line(3) = {3, 4}; Line(4) = {4, 5}; Line(5) = {5, 6};
Line(6) = {6, 1}; Line(7) = {2, 5};
Curve Loop(1) = {1, 7, 5, 6}; Plane Surface(1) = {1};
Curve Loop(2) = {2, 3, 4, -7}; Plane Surface(2) = {2};
Physical Curve("bottom", 1) = {1, 2};
Physical Curve("clamped", 2) = {1};
Physical Curve("left", 3) = {6};
Physical Curve("top", 4) = {4, 5};
Physical Curve("interface", 5) = {7};
Physical Surface("soft", 10) = {1};
Physical Surface("hard", 11) = {2};
Physical Surface("plate", 12) = {1, 2};
