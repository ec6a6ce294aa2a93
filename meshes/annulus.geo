// Annulus between radii 0.5 and 1 (area 0.75 pi), two materials split at x = 0.
h = 0.1;
Point(1) = {0, 0, 0, h};
Point(2) = {0.5, 0, 0, h}; Point(3) = {0, 0.5, 0, h}; Point(4) = {-0.5, 0, 0, h}; Point(5) = {0, -0.5, 0, h};
Point(6) = {1, 0, 0, h}; Point(7) = {0, 1, 0, h}; Point(8) = {-1, 0, 0, h}; Point(9) = {0, -1, 0, h};
Circle(1) = {2, 1, 3}; Circle(2) = {3, 1, 4}; Circle(3) = {4, 1, 5}; Circle(4) = {5, 1, 2};
Circle(5) = {6, 1, 7}; Circle(6) = {7, 1, 8}; Circle(7) = {8, 1, 9}; Circle(8) = {9, 1, 6};
Line(9) = {3, 7}; Line(10) = {5, 9};
Curve Loop(1) = {10, 8, 5, -9, -1, -4};   // x > 0 half
Curve Loop(2) = {9, 6, 7, -10, -3, -2};   // x < 0 half
Plane Surface(1) = {1}; Plane Surface(2) = {2};
Physical Curve("inner", 1) = {1, 2, 3, 4};
Physical Curve("outer", 2) = {5, 6, 7, 8};
Physical Surface("right_material", 11) = {1};
Physical Surface("left_material", 12) = {2};
